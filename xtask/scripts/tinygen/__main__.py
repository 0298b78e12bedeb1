"""`python3 -m tinygen` (from xtask/scripts), same as `python3 xtask/scripts/gen_tiny_model.py`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
