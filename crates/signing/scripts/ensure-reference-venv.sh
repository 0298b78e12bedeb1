#!/usr/bin/env bash
# Makes, or reuses, the Python venv holding the model_signing reference CLI that
# crates/signing/tests/reference_interop.rs checks this crate against.
#
#   ensure-reference-venv.sh [VENV_DIR]
#
# VENV_DIR defaults to $CARGO_TARGET_DIR/model-signing-venv, else
# <workspace>/target/model-signing-venv. Every package comes from requirements.txt
# beside this script, pinned with its hashes and installed with --require-hashes
# --no-deps, so nothing unpinned is ever fetched. The venv is rebuilt only when
# requirements.txt changes: a copy of it inside the venv is the stamp, written last.
# A lock (flock on VENV_DIR.lock) makes concurrent callers wait for one build.
# Prints the venv's path on success; on failure prints one line saying what to
# install and exits non-zero.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
requirements="$here/requirements.txt"
python="${PYTHON:-python3}"

if [ $# -ge 1 ]; then
    venv="$1"
else
    target="${CARGO_TARGET_DIR:-$root/target}"
    case "$target" in /*) ;; *) target="$root/$target" ;; esac
    venv="$target/model-signing-venv"
fi

fail() {
    echo "ensure-reference-venv: $*" >&2
    exit 1
}

command -v flock >/dev/null || fail "flock not found: install util-linux"
command -v "$python" >/dev/null || fail "$python not found: install Python 3.11 with venv and pip"

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9

if [ -x "$venv/bin/model_signing" ] && cmp -s "$requirements" "$venv/requirements.txt"; then
    echo "$venv"
    exit 0
fi

rm -rf "$venv"
log="$venv.log"
if ! "$python" -m venv "$venv" >"$log" 2>&1; then
    rm -rf "$venv"
    fail "'$python -m venv' failed (see $log): install Python's venv module (Debian: python3-venv)"
fi
# A PIP_FIND_LINKS from the environment would add a local source the hashes still
# guard; drop it so the install is the one a fresh machine makes, from the index.
if ! env -u PIP_FIND_LINKS "$venv/bin/python" -m pip install --quiet \
    --disable-pip-version-check --no-input --require-hashes --no-deps \
    -r "$requirements" >>"$log" 2>&1; then
    rm -rf "$venv"
    fail "pip could not install the pinned model_signing packages (see $log): PyPI must be reachable (pip install --require-hashes -r $requirements)"
fi
if ! "$venv/bin/model_signing" --help >>"$log" 2>&1; then
    rm -rf "$venv"
    fail "the installed model_signing does not start (see $log)"
fi
cp "$requirements" "$venv/requirements.txt"
echo "$venv"
