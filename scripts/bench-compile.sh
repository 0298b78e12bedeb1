#!/usr/bin/env bash
# Compile times of the workspace of crates against the single crate it was cut from, measured
# in one run, side by side (the benchmark of docs/performance.md, "Compile times"):
#
#   scripts/bench-compile.sh [BASELINE_COMMIT]     # default: e5cadc4, the last single-crate commit
#
# Both trees are exported from git (`git archive`: the committed tree, never the working
# tree's edits) into target/bench/compile/{single,workspace}, each with its own target folder,
# and measured in alternation so both see the same load:
#   1. a clean `cargo build --release -p xtask` (dependencies included);
#   2. the rebuild after touching the bundle's verify.rs;
#   3. the rebuild after touching vocab.rs (the bottom of the layers);
#   4. the test command's compile: `cargo test --release --no-run` after step 3.
# A touch changes the file's mtime, which is what cargo compares. Prints one row per
# measurement with both times and the ratio workspace / single, and writes the same table to
# target/bench/compile/compile.md. Needs the crates in ~/.cargo (a first `cargo build` fetched
# them) or the network. About 40 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base="${1:-e5cadc4}"
out="$root/target/bench/compile"
mkdir -p "$out"

export_tree() { # commit dir
  rm -rf "$2"
  mkdir -p "$2"
  git -C "$root" archive "$1" | tar -x -C "$2"
}

export_tree "$base" "$out/single"
export_tree HEAD "$out/workspace"

# The files each layout keeps them in.
bundle_file() { [ -d "$1/crates" ] && echo "$1/crates/bundle/src/verify.rs" || echo "$1/xtask/src/bundle/verify.rs"; }
vocab_file() { [ -d "$1/crates" ] && echo "$1/crates/base/src/vocab.rs" || echo "$1/xtask/src/vocab.rs"; }

seconds() { # dir command...
  local dir=$1
  shift
  local start end
  start=$(date +%s.%N)
  (cd "$dir" && CARGO_TARGET_DIR="$dir/target" "$@" >"$dir/last.log" 2>&1) || {
    echo "failed in $dir: $*" >&2
    tail -20 "$dir/last.log" >&2
    exit 1
  }
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }'
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }

declare -A t
measure() { # label command...
  local label=$1
  shift
  for tree in single workspace; do
    echo "[$(date +%T)] $label: $tree ..." >&2
    case "$label" in
      touch-bundle) touch "$(bundle_file "$out/$tree")" ;;
      touch-vocab) touch "$(vocab_file "$out/$tree")" ;;
    esac
    t[$label,$tree]=$(seconds "$out/$tree" "$@")
    echo "[$(date +%T)] $label: $tree ${t[$label,$tree]} s" >&2
  done
}

measure clean cargo build --release -p xtask
measure touch-bundle cargo build --release -p xtask
measure touch-vocab cargo build --release -p xtask
measure test-compile cargo test --release --no-run

{
  echo "Compile times, single crate ($base) against the workspace ($(git -C "$root" rev-parse --short HEAD)), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo
  echo "| measurement | single crate | workspace | workspace / single |"
  echo "|---|---|---|---|"
  for label in clean touch-bundle touch-vocab test-compile; do
    s=${t[$label,single]}
    w=${t[$label,workspace]}
    printf '| %s | %.1f s | %.1f s | %.2f× |\n' "$label" "$s" "$w" "$(ratio "$w" "$s")"
  done
  printf '\nIn the workspace, touch-bundle / touch-vocab = %.2f× (in the single crate %.2f×)\n' \
    "$(ratio "${t[touch-bundle,workspace]}" "${t[touch-vocab,workspace]}")" \
    "$(ratio "${t[touch-bundle,single]}" "${t[touch-vocab,single]}")"
} | tee "$out/compile.md"
