#!/usr/bin/env bash
# Counts what a build of the tool does with the trust cases of the hostile suite (the bundle
# bound to itself, libraries edited in place, model values, named file errors, option-like
# names, leftovers of killed runs, and every bundle file mutated four ways), one line per case:
#   <exit code> | <case> | <first error line>
# then the tally of exit codes. Run it with two builds to compare them, e.g. the build of an
# older commit and this one:
#   scripts/hostile-counts.sh target/release/xtask
#   scripts/hostile-counts.sh /path/to/older/xtask
# It works in target/hostile-counts/ (a copy of recipes/, onnx/tiny, golden/tiny, the runtime
# hard-linked), builds and packages action_context and action_step with the build given, and
# uses the hf test double for fetch and release. Exit 0 = the tool accepted the case (a silent
# acceptance unless the case is a good one), 1/2 = refused, other = a signal.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=$(realpath "${1:?usage: scripts/hostile-counts.sh PATH/TO/xtask}")
work=${HOSTILE_COUNTS_DIR:-$repo/target/hostile-counts}
base=$work/base
rm -rf "$work" && mkdir -p "$base/target"
cp -a recipes "$base/"
mkdir -p "$base/onnx" "$base/golden"
cp -a onnx/tiny "$base/onnx/" && cp -a golden/tiny "$base/golden/"
"$bin" doctor --need ort >/dev/null 2>&1 || true # fetches the runtime into this checkout
# Hard links to the files (the checkout may hold the runtime through a link: never edit it).
cp -RlL target/qnn-runtime "$base/target/qnn-runtime"
"$bin" --root "$base" build-ctx --soc 77 --only action_context,action_step >/dev/null 2>&1
"$bin" --root "$base" package --allow-unmeasured --soc 77 --only action_context,action_step \
  --out "$base/dist/t" >/dev/null 2>&1
# The bound bundle: a component with external data (llm_split0), the vision component (so the
# trace too) and their HTP parity report.
"$bin" --root "$base" build-ctx --soc 77 --only vision,llm_split0 >/dev/null 2>&1
"$bin" --root "$base" parity --backend htp --only vision,llm_split0 >/dev/null 2>&1
"$bin" --root "$base" package --allow-unmeasured --soc 77 --only vision,llm_split0 \
  --out "$base/dist/b" >/dev/null 2>&1

export PATH="$repo/test-doubles/hf:$PATH" HF_TOKEN=t
results=$work/results.txt
: >"$results"
fresh() { # a case's project: a copy of the base, its runtime hard-linked
  rm -rf "$work/p" && mkdir -p "$work/p/target" && cd "$base"
  find . -mindepth 1 -maxdepth 1 ! -name target -exec cp -a {} "$work/p/" \;
  cp -Rl target/qnn-runtime "$work/p/target/" && cd "$work/p"
  export HF_TEST_DOUBLE_STORE=$work/p/hf-store HF_TEST_DOUBLE_LOG=$work/p/hf.log
  unset HF_TEST_DOUBLE_FAIL
}
case_() { # case_ NAME COMMAND...: runs it, records exit code and first error line
  local name=$1 rc=0
  shift
  "$@" >"$work/out" 2>&1 || rc=$?
  echo "$rc | $name | $(grep -m1 -E '^error|panicked' "$work/out" | cut -c1-150 || true)" | tee -a "$results"
}
note() { echo "$1 | $2 | $3" | tee -a "$results"; }
rehash() { # recomputes manifest.json and SHA256SUMS of bundle $1, as a forger would
  python3 - "$1" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
m = json.load(open(f"{d}/manifest.json"))
for f in m["files"]:
    b = open(os.path.join(d, f["path"]), "rb").read()
    f["sha256"], f["bytes"] = hashlib.sha256(b).hexdigest(), len(b)
json.dump(m, open(f"{d}/manifest.json", "w"), indent=2)
open(f"{d}/SHA256SUMS", "w").write("".join(f"{f['sha256']}  {f['path']}\n" for f in m["files"]))
PY
}
plant() { # makes bundle $1 the hf double's someone/tiny@main
  local r=hf-store/someone/tiny
  mkdir -p $r/refs/heads $r/refs/tags $r/refs/pr $r/prs $r/commits
  echo planted >$r/refs/heads/main && rm -rf $r/commits/planted && cp -a "$1" $r/commits/planted
}
ctx_sum() { find ctx/tiny -type f | sort | xargs sha256sum | sha256sum; }
W=ctx/action_context_socid77_archv73_ctx.onnx
edit_swap() { cp "$1/ctx/action_step_socid77_archv73_ctx.onnx" "$1/$W"; }
edit_io() {
  python3 -c "import json,sys;p=sys.argv[1]+'/reports/bundle.json';j=json.load(open(p));j['components'][0]['inputs'][0][0]='renamed';json.dump(j,open(p,'w'),indent=2)" "$1"
}
edit_golden() { cp "$1/golden/action_step_io.npz" "$1/golden/action_context_io.npz"; }
for e in swap io golden; do
  fresh
  cp -a dist/t dist/f && "edit_$e" dist/f && rehash dist/f
  case_ "verify: bundle re-hashed after edit '$e'" "$bin" --root . verify dist/f
  plant dist/f
  before=$(ctx_sum)
  case_ "fetch: bundle re-hashed after edit '$e'" "$bin" --root . fetch --repo someone/tiny
  [ "$(ctx_sum)" = "$before" ] || echo "   (ctx/ changed by that fetch)" | tee -a "$results"
done

flip_lib() { # one byte of libQnnHtp.so flipped, size and mtime kept (a copy: the link is cut)
  local lib
  lib=$(find target/qnn-runtime -name libQnnHtp.so)
  cp "$lib" "$lib.copy" && mv "$lib.copy" "$lib"
  python3 -c "
import os, sys
p = sys.argv[1]; st = os.stat(p); b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 1
open(p, 'wb').write(b); os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))" "$lib"
}
for args in "build-ctx --soc 77 --only action_context --force" \
  "parity --backend cpu --only action_context" "parity --backend ort --only action_context"; do
  fresh && flip_lib
  # shellcheck disable=SC2086
  case_ "libQnnHtp.so flipped: $args" "$bin" --root . $args
done

M=recipes/tiny/model.toml
R=recipes/tiny/action_context.toml
P="parity --backend ort --only action_context"
B="build-ctx --soc 77 --only action_context --force"
value_case() { # value_case NAME "COMMAND" FILE SED-EXPRESSION
  fresh && sed -i "$4" "$3"
  # shellcheck disable=SC2086
  case_ "$1" "$bin" --root . $2
}
value_case "family = llama" "$P" $M 's/family = "molmoact2"/family = "llama"/'
value_case "qairt = 2.46.0" "$P" $M 's/qairt = "2.47.0"/qairt = "2.46.0"/'
value_case "seq_len = 131" "$P" $M 's/seq_len = 130/seq_len = 131/'
value_case "weight_sharing_group = ../x" "$B" $R 's/vtcm_mb = 0/vtcm_mb = 0\nweight_sharing_group = "..\/x"/'
value_case "vtcm_mb = 1000000" "$B" $R 's/vtcm_mb = 0/vtcm_mb = 1000000/'
value_case "override reason of two words" "$P" $M 's/^reason = "The HTP runs.*/reason = "fp16 rounding"/'
for f in $M $R; do
  fresh && mv "$f" "$work/outside.toml" && ln -s "$work/outside.toml" "$f"
  # shellcheck disable=SC2086
  case_ "$f a link out of the project" "$bin" --root . $P
done
fresh
python3 -c "p='onnx/tiny/llm_split0.onnx.data';b=open(p,'rb').read();open(p,'wb').write(b[:len(b)//2])"
case_ "llm_split0.onnx.data truncated" "$bin" --root . parity --backend ort --only llm_split0
fresh
python3 - <<'PY'
# model.graph(7).input(11).type(2).tensor_type(1) = {elem_type: 13}, lengths re-encoded
def varint(b, p):
    v = s = 0
    while True:
        x = b[p]; p += 1; v |= (x & 0x7F) << s; s += 7
        if x < 0x80:
            return v, p
def enc(v):
    o = bytearray()
    while True:
        x = v & 0x7F; v >>= 7
        o.append(x | 0x80 if v else x)
        if not v:
            return bytes(o)
def edit(msg, path, leaf):
    out, p, done = bytearray(), 0, False
    while p < len(msg):
        st = p; tag, p = varint(msg, p); num, wire = tag >> 3, tag & 7
        if wire == 0:
            _, p = varint(msg, p); out += msg[st:p]
        elif wire in (1, 5):
            p += 8 if wire == 1 else 4; out += msg[st:p]
        else:
            n, p = varint(msg, p); body = msg[p:p + n]; p += n
            if not done and num == path[0]:
                done = True
                inner = leaf if len(path) == 1 else edit(body, path[1:], leaf)
                out += enc(tag) + enc(len(inner)) + inner
            else:
                out += msg[st:p]
    return bytes(out)
f = "onnx/tiny/action_context.onnx"
open(f, "wb").write(edit(open(f, "rb").read(), [7, 11, 2, 1], bytes([8, 13])))
PY
# shellcheck disable=SC2086
case_ "a graph input of element type 13" "$bin" --root . $B
fresh
case_ "release --tag=-x --dry-run" "$bin" --root . release --repo someone/tiny --tag=-x --bundle dist/t --dry-run

fresh
mkdir -p target/fetch/tiny-killed && echo x >target/fetch/tiny-killed/f && plant dist/t
"$bin" --root . fetch --repo someone/tiny >/dev/null 2>&1 || true
if [ -d target/fetch/tiny-killed ]; then note 0 "a killed fetch's folder, after the next fetch" "left"; else note 2 "a killed fetch's folder, after the next fetch" "removed"; fi
fresh
mkdir -p target/release-verify-killed && echo x >target/release-verify-killed/f
HF_TEST_DOUBLE_FAIL=upload "$bin" --root . release --repo someone/tiny --bundle dist/t >/dev/null 2>&1 || true
if [ -d target/release-verify-killed ]; then note 0 "a killed release's folder, after the next release" "left"; else note 2 "a killed release's folder, after the next release" "removed"; fi

# Every file of the bundle truncated, byte-flipped, emptied and replaced by another kind.
cd "$base"
for f in $(cd dist/t && find . -type f | sed 's|^\./||' | sort); do
  for m in truncated flipped emptied foreign; do
    rm -rf dist/m && cp -a dist/t dist/m
    python3 - "dist/m/$f" "$m" <<'PY'
import sys
p, m = sys.argv[1], sys.argv[2]
b = bytearray(open(p, "rb").read())
if m == "truncated":
    b = b[: len(b) // 2]
elif m == "flipped" and b:
    b[len(b) // 2] ^= 0xFF
elif m == "emptied":
    b = bytearray()
elif m == "foreign":
    other = "dist/t/golden/action_step_io.npz" if p.endswith(".onnx") else "dist/t/ctx/action_step_socid77_archv73_ctx.onnx"
    b = open(other, "rb").read()
open(p, "wb").write(b)
PY
    [ "$f" = manifest.json ] || [ "$f" = SHA256SUMS ] || rehash dist/m
    case_ "bundle file $f $m (re-hashed)" "$bin" --root . verify dist/m >/dev/null
  done
done
# Every file of the bound bundle flipped, deleted (and dropped from the manifest) or replaced by
# another file's bytes, manifest.json and SHA256SUMS recomputed (of those two themselves: the
# file alone changed), each through verify and through fetch (the hf double): exit 0 is a wrong
# pass; "(file not named)" and "(… changed by that fetch)" mark the other failures.
layout_sum() { find ctx onnx golden -type f 2>/dev/null | sort | xargs sha256sum | sha256sum; }
mutate_b() { # mutate_b BUNDLE FILE flipped|deleted|replaced
  python3 - "$1" "$2" "$3" <<'PY'
import hashlib, json, os, sys
d, f, m = sys.argv[1:]
p = os.path.join(d, f)
if m == "deleted":
    os.remove(p)
elif m == "flipped":
    b = bytearray(open(p, "rb").read())
    if b:
        b[len(b) // 2] ^= 0xFF
    open(p, "wb").write(b)
else:
    other = "golden/vision_io.npz" if not f.endswith(".npz") else "ctx/vision_socid77_archv73_ctx.onnx"
    open(p, "wb").write(open(os.path.join(d, other), "rb").read())
if f in ("manifest.json", "SHA256SUMS"):
    sys.exit(0)
mf = json.load(open(f"{d}/manifest.json"))
mf["files"] = [e for e in mf["files"] if os.path.exists(os.path.join(d, e["path"]))]
for e in mf["files"]:
    b = open(os.path.join(d, e["path"]), "rb").read()
    e["sha256"], e["bytes"] = hashlib.sha256(b).hexdigest(), len(b)
json.dump(mf, open(f"{d}/manifest.json", "w"), indent=2)
open(f"{d}/SHA256SUMS", "w").write("".join(f"{e['sha256']}  {e['path']}\n" for e in mf["files"]))
PY
}
named() { grep -q -F "$1" "$work/out" || echo "   (file not named: $1)" | tee -a "$results"; }
for f in $(cd "$base/dist/b" && find . -type f | sed 's|^\./||' | sort); do
  for m in flipped deleted replaced; do
    fresh
    rm -rf dist/m && cp -a dist/b dist/m && mutate_b dist/m "$f" "$m"
    case_ "bound: verify, $f $m (re-hashed)" "$bin" --root . verify dist/m
    named "$f"
    plant dist/m
    before=$(layout_sum)
    case_ "bound: fetch, $f $m (re-hashed)" "$bin" --root . fetch --repo someone/tiny
    named "$f"
    [ "$(layout_sum)" = "$before" ] || echo "   (ctx/, onnx/ or golden/ changed by that fetch)" | tee -a "$results"
  done
done

# The manifest as a closed type: an unknown role, format or field.
for e in 'm["files"][0]["role"]="evil"' 'm["format"]="other.v9"' 'm["signer"]="me"'; do
  fresh
  rm -rf dist/m && cp -a dist/b dist/m
  python3 -c "import json,sys;p=sys.argv[1];m=json.load(open(p));$e;json.dump(m,open(p,'w'),indent=2)" dist/m/manifest.json
  case_ "manifest $e: verify" "$bin" --root . verify dist/m
  plant dist/m
  case_ "manifest $e: fetch" "$bin" --root . fetch --repo someone/tiny
done

# The trace and model.toml against each other, read by `run` (exit 0: the chain ran on them).
npz_edit() { # npz_edit NPZ KEY nan|swap:OTHER: a NaN as the tensor's first value, or two swapped
  python3 - "$@" <<'PY'
import sys, zipfile
path, key, how = sys.argv[1:]
z = zipfile.ZipFile(path); members = {n: z.read(n) for n in z.namelist()}; z.close()
def data_at(b):
    hl = int.from_bytes(b[8:10], "little") if b[6] == 1 else int.from_bytes(b[8:12], "little")
    return (10 if b[6] == 1 else 12) + hl
k = key + ".npy"
if how == "nan":
    b = bytearray(members[k]); at = data_at(b)
    hdr = b[:at].decode("latin1")
    b[at:at + 4] = bytes([0, 0, 0xC0, 0x7F]) if "<f4" in hdr else b[at:at + 4]
    if "|b1" in hdr or "<i8" in hdr:
        sys.exit("not a float tensor: " + hdr)
    members[k] = bytes(b)
else:
    o = how.split(":")[1] + ".npy"
    members[k], members[o] = members[o], members[k]
with zipfile.ZipFile(path, "w") as z:
    for n, b in members.items():
        z.writestr(n, b)
PY
}
T=golden/tiny/trace.json
RUN="run --backend ort --iters 1 --warmup 0 --no-report"
json_edit() { python3 -c "import json,sys;p=sys.argv[1];j=json.load(open(p));$2;json.dump(j,open(p,'w'),indent=2)" "$1"; }
fresh && json_edit $T 'j["seq_len"]=131'
# shellcheck disable=SC2086
case_ "trace.json seq_len 131" "$bin" --root . $RUN
fresh && json_edit $T 'j["timesteps"]=[0.0,0.25]'
# shellcheck disable=SC2086
case_ "trace.json timesteps [0.0, 0.25]" "$bin" --root . $RUN
fresh && mv golden/tiny/trace.npz "$work/outside.npz" && ln -s "$work/outside.npz" golden/tiny/trace.npz
# shellcheck disable=SC2086
case_ "trace.npz a link out of the project" "$bin" --root . $RUN
for k in action_dim_is_pad initial_noise; do
  fresh && npz_edit golden/tiny/trace.npz $k nan
  # shellcheck disable=SC2086
  case_ "trace.npz NaN in $k" "$bin" --root . $RUN
done
fresh && npz_edit golden/tiny/trace.npz q01 swap:q99
# shellcheck disable=SC2086
case_ "trace.npz q01 > q99 (swapped)" "$bin" --root . $RUN
value_case "model.toml llm_splits with a duplicate" "$RUN" $M 's/llm_splits = \["llm_split0", "llm_split1"/llm_splits = ["llm_split0", "llm_split0"/'
value_case "model.toml timesteps decreasing" "$RUN" $M 's/timesteps = \[0.0, 0.5\]/timesteps = [0.5, 0.0]/'
value_case "model.toml timesteps outside [0, 1)" "$RUN" $M 's/timesteps = \[0.0, 0.5\]/timesteps = [0.0, 1.0]/'

# --dry-run refuses what the build would (exit 0: accepted).
Q=recipes/tiny/action_step.toml
value_case "dry-run: exclude NoSuchOp" "build-ctx --soc 77 --only action_step --dry-run" $Q \
  '$a [quantize]\nprecision = "w8a16"\ncalibration = "golden"\nexclude = ["NoSuchOp"]'
fresh && mkdir -p calib && printf '[quantize]\nprecision = "w8a16"\ncalibration = "calib"\n' >>$Q
case_ "dry-run: an empty calibration folder" "$bin" --root . build-ctx --soc 77 --only action_step --dry-run
fresh
case_ "conformance --op NoSuchOp" "$bin" --root . conformance --only action_step --op NoSuchOp --backend cpu

# Messages that name what is wrong (the line shows the message; exit 2 either way).
fresh && cp ctx/tiny/action_context_socid77_archv73_ctx.onnx onnx/tiny/action_context.onnx
case_ "action_context.onnx replaced by its EPContext wrapper (parity --backend cpu)" "$bin" --root . parity --backend cpu --only action_context
named "EPContext"
fresh
rm -rf dist/m && cp -a dist/b dist/m && mutate_b dist/m reports/parity-htp.json deleted
case_ "bundle without reports/parity-htp.json" "$bin" --root . verify dist/m
named "reports/parity-htp.json"

echo "--- exit codes over $(wc -l <"$results") lines of $results:"
grep -E '^[0-9-]+ \|' "$results" | cut -d' ' -f1 | sort | uniq -c
