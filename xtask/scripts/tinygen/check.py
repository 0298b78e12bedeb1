"""`--check`: regenerates every committed model into a temporary folder and compares each
file the generator writes, byte for byte, with the checkout's; a committed file of a model's
folders that the generator does not write is a difference too. Nothing in the checkout is
written. Exit 0 when everything is identical, 1 with one line per difference otherwise.

A difference is explained where the format allows: for an npz, which members differ (or that
only the zip container does, which points at another zlib); for a recipe or trace.json, the
first differing line; for an ONNX file, which initializers or whether the nodes differ.
"""

from __future__ import annotations

import io
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np
import onnx

from .model import generate
from .variants import COMMITTED

REQUIREMENTS = Path(__file__).with_name("requirements.txt")


def check(root: Path) -> int:
    differences = []
    compared = 0
    with tempfile.TemporaryDirectory(prefix="tinygen-check-") as tmp:
        fresh = Path(tmp)
        for name, variant in COMMITTED.items():
            written = [p.relative_to(fresh) for p in generate(variant, fresh)]
            for rel in written:
                compared += 1
                differences += compare(rel, fresh / rel, root / rel)
            for folder in (Path("onnx") / name, Path("golden") / name, Path("recipes") / name):
                if not (root / folder).is_dir():
                    continue
                for f in sorted((root / folder).rglob("*")):
                    rel = f.relative_to(root)
                    if f.is_file() and rel not in written:
                        differences.append(f"{rel}: in the checkout but not written by the generator")
    models = ", ".join(COMMITTED)
    if not differences:
        print(f"gen_tiny_model.py --check: {compared} files of {models} are byte-identical to the checkout")
        return 0
    print(f"gen_tiny_model.py --check: the generator does not reproduce the committed {models}:")
    for line in differences:
        print(f"  {line}")
    print(versions_hint())
    print("regenerate with `python3 xtask/scripts/gen_tiny_model.py` (and `--variant uneven`) and commit, "
          "or fix the generator")
    return 1


def compare(rel: Path, fresh: Path, committed: Path) -> list:
    if not committed.is_file():
        return [f"{rel}: missing in the checkout (the generator writes it)"]
    a, b = fresh.read_bytes(), committed.read_bytes()
    if a == b:
        return []
    if rel.suffix == ".npz":
        return [f"{rel}: {why}" for why in npz_differences(a, b)]
    if rel.suffix in (".toml", ".json"):
        return [f"{rel}: {text_difference(a, b)}"]
    if rel.suffix == ".onnx":
        return [f"{rel}: {onnx_difference(a, b)}"]
    return [f"{rel}: {byte_difference(a, b)}"]


def byte_difference(fresh: bytes, committed: bytes) -> str:
    at = next((i for i, (x, y) in enumerate(zip(fresh, committed)) if x != y), min(len(fresh), len(committed)))
    return f"differs from byte {at} (generated {len(fresh)} bytes, committed {len(committed)})"


def text_difference(fresh: bytes, committed: bytes) -> str:
    new, old = fresh.decode().splitlines(), committed.decode().splitlines()
    for i, (x, y) in enumerate(zip(new, old)):
        if x != y:
            return f"line {i + 1} differs: committed {y!r}, generated {x!r}"
    return f"generated {len(new)} lines, committed {len(old)}"


def npz_differences(fresh: bytes, committed: bytes) -> list:
    try:
        new = zipfile.ZipFile(io.BytesIO(fresh))
        old = zipfile.ZipFile(io.BytesIO(committed))
    except zipfile.BadZipFile:
        return [f"the committed file is not a zip archive ({byte_difference(fresh, committed)})"]
    out = []
    new_names, old_names = new.namelist(), old.namelist()
    for m in new_names:
        if m not in old_names:
            out.append(f"member {m} missing in the committed file")
    for m in old_names:
        if m not in new_names:
            out.append(f"member {m} is not written by the generator")
    same_values = []
    for m in (m for m in new_names if m in old_names):
        x, y = new.read(m), old.read(m)
        if x != y:
            why = array_difference(x, y)
            if why is None:
                same_values.append(m)
            else:
                out.append(f"member {m} differs ({why})")
    if same_values:
        out.append(f"members {', '.join(same_values)} hold the same arrays under another .npy header "
                   "(rewritten by another tool?)")
    if not out:
        why = "member order" if new_names != old_names else "zip container or compression (another zlib?)"
        out.append(f"the same arrays, but the {why} differs")
    return out


def array_difference(fresh: bytes, committed: bytes) -> str | None:
    """What differs between two .npy members; None when they hold the same array (bit for
    bit) and only the header's text differs."""
    try:
        a = np.lib.format.read_array(io.BytesIO(fresh), allow_pickle=False)
        b = np.lib.format.read_array(io.BytesIO(committed), allow_pickle=False)
    except ValueError as e:
        return f"unreadable: {e}"
    if a.shape != b.shape or a.dtype != b.dtype:
        return f"generated {a.dtype}{list(a.shape)}, committed {b.dtype}{list(b.shape)}"
    if a.tobytes() == b.tobytes():
        return None
    diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    return f"max abs difference {np.nanmax(diff):.3g} in {int(np.count_nonzero(diff))} of {a.size} values"


def onnx_difference(fresh: bytes, committed: bytes) -> str:
    try:
        new = onnx.load_model_from_string(fresh)
        old = onnx.load_model_from_string(committed)
    except Exception as e:  # a corrupt committed file: say so rather than crash the check
        return f"the committed file does not parse as ONNX ({e})"
    olds = {t.name: t.SerializeToString() for t in old.graph.initializer}
    news = {t.name: t.SerializeToString() for t in new.graph.initializer}
    changed = sorted(n for n in news.keys() | olds.keys() if news.get(n) != olds.get(n))
    parts = []
    if changed:
        shown = ", ".join(changed[:5]) + (f" and {len(changed) - 5} more" if len(changed) > 5 else "")
        parts.append(f"initializers differ: {shown}")
    if [n.SerializeToString() for n in new.graph.node] != [n.SerializeToString() for n in old.graph.node]:
        parts.append(f"graph nodes differ (generated {len(new.graph.node)}, committed {len(old.graph.node)})")
    return "; ".join(parts) or f"same graph and initializers, other fields differ ({byte_difference(fresh, committed)})"


def versions_hint() -> str:
    """The installed versions of the pinned packages, against the pins: output can depend on
    them (protobuf serialisation, zlib through Python), so a mismatch is the first suspect."""
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pins[name.strip()] = version.strip()
    rows = []
    for name, pinned in pins.items():
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "not installed"
        rows.append(f"{name} {have}" + ("" if have == pinned else f" (pinned {pinned})"))
    return "installed: " + ", ".join(rows) + f" (pins: {REQUIREMENTS.name} beside the generator)"
