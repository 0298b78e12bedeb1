#!/usr/bin/env bash
# Makes (or reuses) the tiny-model generator's Python environment, target/tinygen-venv, with
# exactly the packages pinned in requirements.txt beside this script, and prints the path of its
# python. The venv is made again only when the pins change (a copy of requirements.txt inside
# it records what it holds). One home for this: .ci/run and the generator's CLI tests both call
# it, so `cargo test --release` on a fresh clone needs nothing set up beforehand. Concurrent
# callers wait on a lock instead of building the venv twice.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
env_dir="$root/target/tinygen-venv"
req="$root/xtask/scripts/tinygen/requirements.txt"
mkdir -p "$root/target"
exec 9>"$root/target/tinygen-venv.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi
if ! cmp -s "$req" "$env_dir/requirements.txt"; then
  echo "making target/tinygen-venv (numpy, onnx pinned in xtask/scripts/tinygen/requirements.txt; about 30 s once)" >&2
  rm -rf "$env_dir"
  python3 -m venv "$env_dir"
  "$env_dir/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2
  cp "$req" "$env_dir/requirements.txt"
fi
echo "$env_dir/bin/python"
