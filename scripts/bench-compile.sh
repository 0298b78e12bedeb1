#!/usr/bin/env bash
# Compile times of the workspace of crates against the single crate it was cut from, measured
# in one run, side by side (the benchmark of docs/performance.md, "Compile times"):
#
#   scripts/bench-compile.sh [BASELINE_COMMIT]     # default: e5cadc4, the last single-crate commit
#   ROUNDS=3 scripts/bench-compile.sh               # each touch rebuild 3 times, the median shown
#   REUSE=1 ROUNDS=3 scripts/bench-compile.sh       # no clean build: the trees and target
#                                                   # folders an earlier run left, brought up to date
#
# On a shared machine the load changes under a long run: the touch rebuilds, the figures the
# workspace is for, are measured in alternation (single, workspace, single, ...) ROUNDS times,
# so both trees see the same load, and each row gives the median of its rounds.
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

rounds="${ROUNDS:-1}"
reuse="${REUSE:-}"
if [ -n "$reuse" ]; then
  for tree in single workspace; do
    [ -d "$out/$tree/target/release" ] || {
      echo "REUSE needs an earlier full run's $out/$tree (run without REUSE first)" >&2
      exit 2
    }
  done
else
  export_tree "$base" "$out/single"
  export_tree HEAD "$out/workspace"
  git -C "$root" rev-parse --short HEAD >"$out/workspace.commit"
fi

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

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

declare -A t all
measure() { # label rounds command...
  local label=$1 n=$2
  shift 2
  local round tree s
  for round in $(seq "$n"); do
    for tree in single workspace; do
      echo "[$(date +%T)] $label: $tree (round $round of $n) ..." >&2
      case "$label" in
        touch-bundle) touch "$(bundle_file "$out/$tree")" ;;
        touch-vocab) touch "$(vocab_file "$out/$tree")" ;;
      esac
      s=$(seconds "$out/$tree" "$@")
      all[$label,$tree]="${all[$label,$tree]:-} $s"
      echo "[$(date +%T)] $label: $tree $s s" >&2
    done
  done
  for tree in single workspace; do
    t[$label,$tree]=$(echo "${all[$label,$tree]}" | median)
  done
}

labels="touch-bundle touch-vocab test-compile"
if [ -z "$reuse" ]; then
  measure clean 1 cargo build --release -p xtask
  labels="clean $labels"
else
  # A first build brings both trees up to date before any touch is timed.
  seconds "$out/single" cargo build --release -p xtask >/dev/null
  seconds "$out/workspace" cargo build --release -p xtask >/dev/null
fi
measure touch-bundle "$rounds" cargo build --release -p xtask
measure touch-vocab "$rounds" cargo build --release -p xtask
measure test-compile 1 cargo test --release --no-run

{
  echo "Compile times, single crate ($base) against the workspace ($(cat "$out/workspace.commit" 2>/dev/null || echo "exported earlier")), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo
  echo "| measurement | single crate | workspace | workspace / single | every round (single; workspace) |"
  echo "|---|---|---|---|---|"
  for label in $labels; do
    s=${t[$label,single]}
    w=${t[$label,workspace]}
    printf '| %s | %.1f s | %.1f s | %.2f× | %s;%s |\n' "$label" "$s" "$w" "$(ratio "$w" "$s")" \
      "${all[$label,single]}" "${all[$label,workspace]}"
  done
  printf '\nIn the workspace, touch-bundle / touch-vocab = %.2f× (in the single crate %.2f×)\n' \
    "$(ratio "${t[touch-bundle,workspace]}" "${t[touch-vocab,workspace]}")" \
    "$(ratio "${t[touch-bundle,single]}" "${t[touch-vocab,single]}")"
} | tee "$out/compile${reuse:+-reused}.md"
