#!/usr/bin/env python3
"""Generate the tiny MolmoAct2-shaped test models (`tiny`, `--variant uneven`), their golden
data and recipes; `--check` proves the committed ones are reproduced byte for byte.

A thin entry point: the generator is the package `tinygen/` beside this file (its
`__init__.py` says what is written where). Needs numpy and onnx, pinned in
`tinygen/requirements.txt`.
"""

import sys
from pathlib import Path

# Nothing is written into the checkout but the generated files (no __pycache__ beside the
# package, so `--check` leaves the tree as it was).
sys.dont_write_bytecode = True
sys.path.insert(0, str(Path(__file__).resolve().parent))

try:
    import numpy  # noqa: F401
    import onnx  # noqa: F401
except ImportError as e:
    print(
        f"gen_tiny_model.py: {e}: the generator needs numpy and onnx; install the pinned versions with\n"
        "  python3 -m pip install -r xtask/scripts/tinygen/requirements.txt\n"
        "(.ci/run installs them into target/tinygen-venv: target/tinygen-venv/bin/python "
        "xtask/scripts/gen_tiny_model.py ...)",
        file=sys.stderr,
    )
    sys.exit(2)

from tinygen.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
