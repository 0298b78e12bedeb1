#!/usr/bin/env bash
# Builds the tool for the board (IQ-9075: aarch64 Linux) from an x86_64 Linux host:
#   scripts/build-aarch64.sh            -> target/aarch64-unknown-linux-gnu/release/xtask
# Installs what is missing first: Debian's cross linker (gcc-aarch64-linux-gnu, with the aarch64
# libc it links against) through apt-get, and the Rust target through rustup. The linker is set
# in .cargo/config.toml ([target.aarch64-unknown-linux-gnu] linker = "aarch64-linux-gnu-gcc").
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=aarch64-unknown-linux-gnu
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO=sudo; fi

if ! command -v aarch64-linux-gnu-gcc >/dev/null; then
  echo "installing the aarch64 cross linker (apt-get) ..." >&2
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    gcc-aarch64-linux-gnu libc6-dev-arm64-cross >&2
fi
if ! rustup target list --installed | grep -qx "$TARGET"; then
  echo "adding the Rust target $TARGET (rustup) ..." >&2
  rustup target add "$TARGET" >&2
fi

cargo build --release --locked --target "$TARGET" -p xtask --bin xtask
BIN="target/$TARGET/release/xtask"
if command -v file >/dev/null; then
  file "$BIN" | grep -q "ARM aarch64" || { file "$BIN" >&2; echo "not an aarch64 ELF" >&2; exit 1; }
fi
echo "$BIN"
