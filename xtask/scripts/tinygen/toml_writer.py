"""A small TOML writer for the recipes: a document is a list of `Table`s (each with the
comment lines shown above its header), values are str, int, float, bool, lists and dicts
(inline tables). Python's `tomllib` only reads, and the recipes must keep their comments
(they are documentation), so no general-purpose serializer fits.

Layout: one blank line between tables, except that a table with no keys of its own sits
directly on the next one (`[parity]` above `[[parity.override]]`). Floats are written in
their shortest round-trip form, in exponent form at or below 0.01 (`1e-4`, as a person
writes a tolerance). `render` reads its own output back with `tomllib` and refuses to return
text that does not parse to exactly the data it was given.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class Table:
    """`[name]` (or `[[name]]` when `array`), a dotted name for a nested table."""

    name: str
    entries: dict = field(default_factory=dict)
    comment: list = field(default_factory=list)
    array: bool = False


def render(tables: list) -> str:
    blocks = []
    for t in tables:
        lines = [f"# {c}".rstrip() for c in t.comment]
        lines.append(f"[[{t.name}]]" if t.array else f"[{t.name}]")
        lines += [f"{key(k)} = {value(v)}" for k, v in t.entries.items()]
        blocks.append((lines, bool(t.entries)))
    out = []
    for i, (lines, has_keys) in enumerate(blocks):
        out += lines
        if has_keys and i + 1 < len(blocks):
            out.append("")
    text = "\n".join(out) + "\n"
    parsed = tomllib.loads(text)
    expected = as_data(tables)
    if parsed != expected:
        raise AssertionError(f"the TOML writer's output does not read back as its data:\n{text}")
    return text


def as_data(tables: list) -> dict:
    """The data the tables describe, as `tomllib` reads it."""
    root: dict = {}
    for t in tables:
        *parents, last = t.name.split(".")
        node = root
        for p in parents:
            node = node.setdefault(p, {})
            if isinstance(node, list):
                node = node[-1]
        if t.array:
            node.setdefault(last, []).append(dict(t.entries))
        else:
            node.setdefault(last, {}).update(t.entries)
    return root


def key(k: str) -> str:
    return k if _BARE_KEY.fullmatch(k) else string(k)


def value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return number(v)
    if isinstance(v, str):
        return string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"no TOML form for {type(v).__name__}: {v!r}")


def number(x: float) -> str:
    if not math.isfinite(x):
        raise ValueError(f"a recipe value must be finite, got {x}")
    if x == 0.0 or abs(x) > 0.01:
        return repr(x)
    for digits in range(17):
        s = f"{x:.{digits}e}"
        if float(s) == x:
            break
    mantissa, exponent = s.split("e")
    return f"{mantissa}e{int(exponent)}"


def string(s: str) -> str:
    out = []
    for ch in s:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'
