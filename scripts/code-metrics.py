#!/usr/bin/env python3
"""The code-shape counts that issue reviews ask for, measured from the sources (no build needed).

    scripts/code-metrics.py            # the summary
    scripts/code-metrics.py --list     # every offender, file:line

The tool's sources are the workspace's crates (`crates/*/src`) and the CLI (`xtask/src`).
Counts:
- public functions whose signature mentions serde_json::Value (or `Value` imported from it);
- backend-name string literals ("htp", "cpu", "ort") outside vocab.rs and outside tests;
- functions over 80 and over 120 lines (sources, and test-doubles and tests);
- test files over 500 lines (xtask/tests, test-doubles/tests);
- import circles: files of one folder importing each other, and top-level modules of one crate
  importing each other (through `use`/paths);
- imports running up the layers: a path from a module to one above it in LAYERS (the order
  docs/design.md draws, bottom first), within a crate or across crates;
- the share of the source lines the largest crate holds.

It reads Rust with a small lexer (strings, raw strings, chars, comments), not a full parser: a
function is `fn name` up to its matching closing brace.
"""
from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Every crate of the tool: its folder and the name other crates use for it.
CRATES = {p.parent.name: p.parent for p in sorted((ROOT / "crates").glob("*/Cargo.toml"))}
CRATES["xtask"] = ROOT / "xtask"
# The layers, bottom first: (crate, top-level module). A module may use those at or below its
# own index; the two at one index stand side by side and may not use each other.
LAYERS = [
    [("base", m) for m in ("vocab", "bad_input", "identity", "disk", "project", "soc")]
    + [("signing", "")],
    [("base", "ui")],
    [("base", "atomic")],
    [("base", m) for m in ("proc", "record", "hashing")],
    [("onnx", "tensor")],
    [("onnx", "onnx")],
    [("recipe", "recipe")],
    [("recipe", "golden"), ("recipe", "fp16"), ("recipe", "htp_target")],
    [("runtime", "runtime")],
    [("runtime", "quantize"), ("runtime", "report")],
    [("parity", "parity")],
    [("parity", "rewritten")],
    [("diagnose", "diagnose"), ("ctx_build", "")],
    [("diagnose", "conformance"), ("chain", "chain")],
    [("chain", "device")],
    [("chain", "executors"), ("chain", "precision")],
    [("bundle", "")],
    [("xtask", "commands")],
    [("xtask", "main")],
]
LAYER_OF = {key: i for i, row in enumerate(LAYERS) for key in row}


def rust_files(*dirs: Path) -> list[Path]:
    out = []
    for d in dirs:
        for p in sorted(d.rglob("*.rs")):
            if "target" in p.parts:
                continue
            out.append(p)
    return out


def blank_code(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Returns the text with comments and literal contents blanked (same length, newlines kept)
    and the string literals found, as (offset, content)."""
    out = list(text)
    literals = []
    i, n = 0, len(text)

    def blank(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:i + 10]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'r(#*)"', text[i:])
            hashes = m.group(1)
            start = i + m.end()
            end = text.find('"' + hashes, start)
            end = n if end < 0 else end
            literals.append((i, text[start:end]))
            blank(start, end)
            i = end + 1 + len(hashes)
        elif c == '"' or (c == "b" and text.startswith('b"', i)):
            start = i + (2 if c == "b" else 1)
            j = start
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            literals.append((i, text[start:j]))
            blank(start, j)
            i = j + 1
        elif c == "'":
            # a char literal ('a', '\n', '\u{..}') or a lifetime ('a)
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:
                blank(i + 1, i + m.end() - 1)
                i += m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out), literals


FN_RE = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")


def functions(code: str):
    """(name, first line, line count, signature) of every fn with a body."""
    for m in FN_RE.finditer(code):
        j = m.end()
        depth_paren = 0
        while j < len(code):
            ch = code[j]
            if ch in "([<":
                depth_paren += 1
            elif ch in ")]>" and depth_paren:
                depth_paren -= 1
            elif ch == ";" and depth_paren == 0:
                j = -1
                break
            elif ch == "{" and depth_paren == 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        sig = code[m.start():j]
        depth, k = 0, j
        while k < len(code):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        first = code.count("\n", 0, m.start()) + 1
        last = code.count("\n", 0, k) + 1
        line_start = code.rfind("\n", 0, m.start()) + 1
        prefix = code[line_start:m.start()]
        yield m.group(1), first, last - first + 1, sig, prefix


def value_functions(files):
    hits = []
    for p in files:
        text = p.read_text()
        code, _ = blank_code(text)
        value_imported = re.search(r"use\s+serde_json::(\{[^}]*\bValue\b[^}]*\}|Value\b)", code) is not None
        for name, line, _, sig, prefix in functions(code):
            if not re.search(r"\bpub\b", prefix):
                continue
            if "serde_json::Value" in sig or (value_imported and re.search(r"(?<![:\w])Value\b", sig)):
                hits.append(f"{p.relative_to(ROOT)}:{line} {name}")
    return hits


def backend_literals(files):
    hits = []
    for p in files:
        if p.name == "vocab.rs":
            continue
        text = p.read_text()
        code, literals = blank_code(text)
        test_at = code.find("#[cfg(test)]")
        for off, s in literals:
            if s in ("htp", "cpu", "ort") and (test_at < 0 or off < test_at):
                line = text.count("\n", 0, off) + 1
                hits.append(f"{p.relative_to(ROOT)}:{line} \"{s}\"")
    return hits


def long_functions(files, limit):
    hits = []
    for p in files:
        code, _ = blank_code(p.read_text())
        for name, line, length, _, _ in functions(code):
            if length > limit:
                hits.append((length, f"{p.relative_to(ROOT)}:{line} {name} ({length} lines)"))
    return [h for _, h in sorted(hits, reverse=True)]


def long_test_files(limit):
    hits = []
    for p in rust_files(ROOT / "xtask" / "tests", ROOT / "test-doubles" / "tests"):
        n = p.read_text().count("\n")
        if n > limit:
            hits.append(f"{p.relative_to(ROOT)} ({n} lines)")
    return hits


def sources():
    return [p for d in CRATES.values() for p in rust_files(d / "src")]


def crate_of(p: Path) -> str:
    for name, d in CRATES.items():
        if (d / "src") in p.parents:
            return name
    raise ValueError(p)


def module_of(p: Path) -> tuple[str, ...]:
    """(crate, module path…): a crate whose src/ is one module (ctx_build, bundle) has its
    files at the top; `main.rs` is a module of its own."""
    crate = crate_of(p)
    rel = p.relative_to(CRATES[crate] / "src").with_suffix("")
    parts = rel.parts
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return (crate,) + tuple(parts)


def layer_key(mod: tuple[str, ...]):
    """The LAYERS entry of a module: its crate and top-level module, or its crate alone."""
    crate = mod[0]
    top = mod[1] if len(mod) > 1 else ""
    if (crate, top) in LAYER_OF:
        return (crate, top)
    if (crate, "") in LAYER_OF:
        return (crate, "")
    return None


def references(mods):
    """Module -> the modules its code names (`crate::`, `super::`, `self::`, `xtask_<crate>::`)."""
    edges = defaultdict(set)
    for mod, p in mods.items():
        code, _ = blank_code(p.read_text())
        code = re.sub(r"#\[cfg\(test\)\]\s*mod\s+tests\s*\{.*", "", code, flags=re.S)
        refs = set()
        pat = r"(?<![\w$])(crate|super|self|xtask_[a-z_]+|xtask)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)"
        for m in re.finditer(pat, code):
            kind = m.group(1)
            if kind == "crate":
                base = (mod[0],)
            elif kind == "self":
                base = mod
            elif kind.startswith("xtask"):
                name = "xtask" if kind == "xtask" else kind[len("xtask_"):]
                if name not in CRATES:
                    continue
                base = (name,)
            else:
                chain = re.match(r"super((?:::super)*)", code[m.start():m.end() + 200])
                base = mod[: len(mod) - 1 - chain.group(1).count("super")]
            path = list(base)
            segs = [s for s in m.group(2).split("::") if s and s != "super"]
            brace_start = m.end() if m.group(2).endswith("{") else None
            heads = []
            if brace_start is not None:
                depth, k = 1, brace_start
                while k < len(code) and depth:
                    depth += {"{": 1, "}": -1}.get(code[k], 0)
                    k += 1
                inner = code[brace_start:k - 1]
                for item in re.split(r",(?![^{]*\})", inner):
                    item = item.strip()
                    if item:
                        heads.append(re.split(r"::|\s", item)[0])
            else:
                heads = [None]
            for head in heads:
                full = path + segs + ([head] if head else [])
                for cut in range(len(full), 0, -1):
                    cand = tuple(full[:cut])
                    if cand in mods and cand != mod:
                        refs.add(cand)
                        break
        edges[mod] |= refs
    return edges


def upward_imports(files):
    mods = {module_of(p): p for p in files}
    hits = []
    for mod, targets in references(mods).items():
        here = layer_key(mod)
        for t in sorted(targets):
            there = layer_key(t)
            if here is None or there is None or here == there:
                continue
            if LAYER_OF[there] >= LAYER_OF[here]:
                hits.append(f"{mods[mod].relative_to(ROOT)} -> {mods[t].relative_to(ROOT)}")
    return hits


def crate_shares(files):
    lines = defaultdict(int)
    for p in files:
        lines[crate_of(p)] += p.read_text().count("\n")
    total = sum(lines.values())
    return total, sorted(((n, c) for c, n in lines.items()), reverse=True)


def import_circles(files):
    mods = {module_of(p): p for p in files}
    edges = references(mods)
    circles = []
    # top-level modules of one crate importing each other
    tops = defaultdict(set)
    for mod, targets in edges.items():
        for t in targets:
            if t[0] == mod[0] and len(mod) > 1 and len(t) > 1 and t[1] != mod[1]:
                tops[mod[:2]].add(t[:2])
    circles += ["crate " + " <-> ".join("/".join(x) for x in sorted(c)) for c in sccs(tops) if len(c) > 1]
    return circles + folder_circles(mods, edges)


def folder_circles(mods, edges):
    """Files of one folder that import each other."""
    # circles: strongly connected components of modules sharing a parent folder
    circles = []
    folders = defaultdict(list)
    for mod in mods:
        folders[mod[:-1] if mods[mod].stem != "mod" else mod[:-1]].append(mod)
    for folder, members in folders.items():
        inside = set(members)
        sub = {m: {t for t in edges[m] if t in inside or any(t[: len(x)] == x for x in inside)} for m in members}

        def owner(t):
            for x in inside:
                if t[: len(x)] == x:
                    return x
            return None

        graph = {m: {owner(t) for t in sub[m]} - {None, m} for m in members}
        circles += [sorted(c) for c in sccs(graph) if len(c) > 1]
    return ["/".join(c[0][:-1]) + ": " + " <-> ".join(x[-1] for x in c) for c in circles]


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="list every offender")
    args = ap.parse_args()
    src = sources()
    tests = rust_files(ROOT / "test-doubles", ROOT / "xtask" / "tests")
    rows = [
        ("public fns with serde_json::Value in the signature", value_functions(src)),
        ("backend-name literals outside vocab.rs (non-test)", backend_literals(src)),
        ("functions over 80 lines (sources)", long_functions(src, 80)),
        ("functions over 120 lines (sources)", long_functions(src, 120)),
        ("functions over 80 lines (tests and doubles)", long_functions(tests, 80)),
        ("functions over 120 lines (tests and doubles)", long_functions(tests, 120)),
        ("test files over 500 lines", long_test_files(500)),
        ("import circles (files of a folder, modules of a crate)", import_circles(src)),
        ("imports running up the layers", upward_imports(src)),
    ]
    for title, hits in rows:
        print(f"{len(hits):5d}  {title}")
        if args.list:
            for h in hits:
                print(f"         {h}")
    total, shares = crate_shares(src)
    print(f"{len(shares):5d}  crates; the largest holds {shares[0][0] / total:.0%} of {total} source lines"
          f" ({shares[0][1]})")
    if args.list:
        for n, c in shares:
            print(f"         {c}: {n} lines ({n / total:.1%})")


if __name__ == "__main__":
    main()
