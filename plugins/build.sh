#!/usr/bin/env bash
# Builds GOAT's guest components reproducibly.
#
#   plugins/build.sh            build and write plugins/dist/ and its SHA256SUMS
#   plugins/build.sh --check    build and fail if any byte differs from plugins/dist/
#
# The host embeds plugins/dist/, so building or testing the host never needs
# this script; CI runs --check so that what is committed is what the source
# builds. Output is byte-identical whichever directory the source is in:
# every absolute path that could reach a binary (the source, CARGO_HOME, the
# target directory) is remapped, codegen is single-unit with LTO, and the
# toolchain and every dependency are pinned (toolchain.sh, Cargo.lock).
# Every crate built from this repository must be a member of this workspace
# (goat-workpath, shared with the host, is one through the plugins/workpath
# symlink): rustc is then given paths relative to plugins/, and cargo hashes
# a path dependency outside the workspace by its absolute path into every
# symbol (rust-lang/cargo#13586), which no remap can undo.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODE=write
case "${1:-}" in
  "") ;;
  --check) MODE=check ;;
  *) echo "usage: plugins/build.sh [--check]" >&2; exit 2 ;;
esac

PREFIX="$("$HERE/toolchain.sh")"
export RUSTC="$PREFIX/bin/rustc"
CARGO="$PREFIX/bin/cargo"
RUSTC_INFO="$("$RUSTC" -vV)"
if ! grep -qx 'release: 1.97.0' <<<"$RUSTC_INFO"; then
  echo "build.sh: $RUSTC is not rustc 1.97.0" >&2
  exit 1
fi
unset RUSTUP_TOOLCHAIN RUSTFLAGS CARGO_BUILD_RUSTFLAGS CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER="$PREFIX/lib/rustlib/x86_64-unknown-linux-gnu/bin/wasm-component-ld"
CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
CARGO_HOME="$(cd "$CARGO_HOME" 2>/dev/null && pwd || echo "$CARGO_HOME")"
export CARGO_HOME
TARGET_DIR="$HERE/target"
SEP=$'\x1f'
export CARGO_ENCODED_RUSTFLAGS="--remap-path-prefix=$TARGET_DIR=/goat/target${SEP}--remap-path-prefix=$HERE=/goat/plugins${SEP}--remap-path-prefix=$CARGO_HOME=/cargo${SEP}-Cstrip=symbols${SEP}-Clink-arg=-zstack-size=131072${SEP}-Clink-arg=--initial-memory=524288${SEP}-Ctarget-feature=+simd128"
# The 128 KiB stack (wasm-ld's default is 1 MiB) keeps the memory a call
# dirties small, so the host's pooled slots reset cheaply between calls;
# the tools recurse little and stack overflow traps (the stack is first in
# memory) rather than corrupting data. A 512 KiB initial memory (wasm-ld's
# default is just the stack and data) leaves a typical call's heap room
# without `memory.grow`, whose pages the host would otherwise protect and
# unprotect around every call: measured in the read_file bench, a no-op call
# 15.6 -> 8.4 µs, a 4 KiB read_file 28.7 -> 20.6 µs; 256 KiB was too small
# for read_file, 1 MiB no faster. The host's smallest memory limit (1 MiB)
# stays above it. +simd128 lets memchr/memmem (search_files' scans) use wasm
# SIMD, which wasmtime runs by default.
export SOURCE_DATE_EPOCH=0

"$CARGO" build --release --locked --target wasm32-unknown-unknown \
  --manifest-path "$HERE/Cargo.toml" --target-dir "$TARGET_DIR" --workspace --exclude goat-pen >&2

BUILT="$TARGET_DIR/wasm32-unknown-unknown/release"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
TOOLS=(read_file write_file edit_file list_directory find_files search_files move_file delete_file)
TESTING=(hostile hostile_rw wants_env wants_socket wants_http wants_more hostile_plugin plugin_writer hook_hostile)
# Example plugins: shipped as files for `goat plugins add`, never embedded.
EXAMPLES=(wc hook_guard)
mkdir -p "$OUT/testing" "$OUT/examples"
for t in "${TOOLS[@]}"; do cp "$BUILT/$t.wasm" "$OUT/$t.wasm"; done
for t in "${TESTING[@]}"; do cp "$BUILT/$t.wasm" "$OUT/testing/$t.wasm"; done
for t in "${EXAMPLES[@]}"; do cp "$BUILT/$t.wasm" "$OUT/examples/$t.wasm"; done
(cd "$OUT" && find . -name '*.wasm' | sed 's|^\./||' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS)

DIST="$HERE/dist"
if [[ "$MODE" == check ]]; then
  if ! diff -u "$DIST/SHA256SUMS" "$OUT/SHA256SUMS" >&2; then
    echo "build.sh: the components built from source differ from plugins/dist/ (above)." >&2
    echo "build.sh: run plugins/build.sh and commit plugins/dist/." >&2
    exit 1
  fi
  (cd "$DIST" && sha256sum --check --quiet SHA256SUMS) || {
    echo "build.sh: plugins/dist/ does not match its own SHA256SUMS" >&2; exit 1; }
  echo "build.sh: plugins/dist/ is byte-identical to a fresh build" >&2
else
  rm -rf "$DIST"
  mkdir -p "$DIST"
  cp -r "$OUT/." "$DIST/"
  cat "$DIST/SHA256SUMS" >&2
fi
