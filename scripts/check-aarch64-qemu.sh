#!/usr/bin/env bash
# Proves the aarch64 build here, under emulation: cross-builds the tool (scripts/build-aarch64.sh),
# then runs that aarch64 binary with qemu-user on a scratch copy of the tiny model, with the
# aarch64 onnxruntime wheel (fetched and sha256-checked by the tool itself) and no QNN at all:
#   doctor --need ort             (ORT present, QNN named as missing, exit 0)
#   doctor                        (all backends needed: exit 1, naming QNN as missing)
#   parity --backend ort --model tiny
#   run    --backend ort --model tiny
# Prints how long each step took. The scratch project lives in target/aarch64-qemu/ (its
# target/qnn-runtime/ is its own: the x86_64 runtime is never touched); the unpacked aarch64
# runtime is reused by the next run. XTASK_QEMU_FRESH=1 starts from an empty runtime folder.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

t0=$(date +%s.%N)
stamp() { awk -v a="$(date +%s.%N)" -v b="$2" -v l="$1" 'BEGIN { printf "%-48s %7.1f s\n", l, a - b }' | tee -a "$timings"; }
scratch="$repo/target/aarch64-qemu"
timings="$scratch/timings.txt"
mkdir -p "$scratch" && : > "$timings"

tb=$(date +%s.%N)
BIN=$(scripts/build-aarch64.sh | tail -n 1)
stamp "cross build (scripts/build-aarch64.sh)" "$tb"

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi
if ! command -v qemu-aarch64 >/dev/null; then
  echo "installing qemu-user (apt-get) ..." >&2
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user >&2
fi
SYSROOT=/usr/aarch64-linux-gnu
[ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || { echo "no aarch64 loader in $SYSROOT (apt-get install libc6-arm64-cross)" >&2; exit 1; }
[ -e "$SYSROOT/lib/libstdc++.so.6" ] || $SUDO apt-get install -y -qq libstdc++6-arm64-cross >&2

# The scratch project: the tiny model's recipes, ONNX and golden tensors, fresh each run.
proj="$scratch/project"
rm -rf "$proj/recipes" "$proj/onnx" "$proj/golden" "$proj/reports" "$proj/ctx"
mkdir -p "$proj/onnx" "$proj/golden" "$proj/target"
cp -r recipes "$proj/"
cp -r onnx/tiny "$proj/onnx/"
cp -r golden/tiny "$proj/golden/"
touch "$proj/Cargo.toml"
if [ "${XTASK_QEMU_FRESH:-0}" = 1 ]; then rm -rf "$proj/target/qnn-runtime"; fi
[ -L "$proj/target/qnn-runtime" ] && { echo "$proj/target/qnn-runtime must not be a link" >&2; exit 1; }

# No user libraries: the aarch64 ORT wheel only, QNN absent (as on a board without the SDK).
run() {
  env -u ORT_DYLIB_PATH -u QNN_LIB_DIR -u QNN_SDK_ROOT -u QAIRT_SDK_ROOT -u QNN_EP_PLUGIN \
    -u ADSP_LIBRARY_PATH qemu-aarch64 -L "$SYSROOT" "$BIN" --root "$proj" "$@"
}

out="$scratch/doctor.txt"
tb=$(date +%s.%N)
run doctor --need ort | tee "$out"
stamp "qemu: doctor (first: fetches the aarch64 wheel)" "$tb"
grep -q "^platform      linux-aarch64" "$out"
grep -q "^ONNX Runtime  1.24.4" "$out"
grep -q "ORT CPU EP .* usable" "$out"
grep -q "MISSING  libonnxruntime_providers_qnn.so" "$out"
grep -q "MISSING  libQnnHtp.so" "$out"
[ -f "$proj/target/qnn-runtime/ort-1.24.4-linux-aarch64/manifest.json" ]

tb=$(date +%s.%N)
if run doctor > "$scratch/doctor-all.txt" 2>&1; then
  echo "doctor must exit 1 when the recipes' QNN backends are not usable" >&2; exit 1
fi
grep -q "needed but not usable" "$scratch/doctor-all.txt"
stamp "qemu: doctor (runtime already unpacked; QNN backends needed: exit 1)" "$tb"

tb=$(date +%s.%N)
run parity --backend ort --model tiny
stamp "qemu: parity --backend ort --model tiny" "$tb"

tb=$(date +%s.%N)
run run --backend ort --model tiny --iters 2 --warmup 1
stamp "qemu: run --backend ort --model tiny" "$tb"

# A QNN backend without QNN: a clear error naming what to set, not a crash.
set +e
run parity --backend htp --model tiny --only action_step > "$scratch/htp.txt" 2>&1
code=$?
set -e
if [ "$code" = 0 ] || ! grep -q "QNN_SDK_ROOT" "$scratch/htp.txt"; then
  cat "$scratch/htp.txt" >&2
  echo "parity --backend htp without QNN should fail naming QNN_SDK_ROOT" >&2
  exit 1
fi
stamp "total" "$t0"
echo "aarch64 under qemu-user: OK (timings in ${timings#"$repo"/})"
