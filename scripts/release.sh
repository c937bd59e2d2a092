#!/usr/bin/env bash
# Build the release archives of gate, the same way locally and in the
# release workflow (.github/workflows/release.yml):
#
#   dist/gate-<version>-<target>.tar.gz   gate-<version>-<target>/{gate,README.md,LICENSE}
#   dist/gpugate-<version>-py3-none-manylinux_2_17_<arch>.manylinux2014_<arch>.whl
#                                         the same binary as a wheel: `pip install gpugate`
#                                         puts `gate` on PATH (scripts/wheel.py assembles it
#                                         from this build: the crate is compiled once)
#   dist/SHA256SUMS                       sha256sum lines for every archive and wheel
#
# Linux binaries are linked against glibc 2.17 with cargo-zigbuild (zig as the
# linker, glibc stubs of that version), so one binary runs on every common
# CUDA image: CentOS 7 / UBI 7 (2.17), UBI 8 (2.28), Ubuntu 18.04-24.04
# (2.27-2.39), Debian 10+ (2.28+). The script checks the result with readelf:
# no symbol may need a GLIBC version newer than 2.17.
#
# Archives are reproducible: paths are remapped, tar entries sorted with the
# commit's time, owner 0 and no gzip timestamp, so the same commit, Rust and
# zig versions give the same bytes. That is what lets a release record its
# checksums in ci-templates/release-checksums.txt (--record) before the tag,
# and the release workflow check that its own build gives the same sums.
#
# Usage: scripts/release.sh [--target TRIPLE]... [--out DIR] [--record]
#                           [--skip-missing-targets]
#   --target    x86_64-unknown-linux-gnu (default) and/or aarch64-unknown-linux-gnu
#   --out       output directory (default dist)
#   --record    write the sums into ci-templates/release-checksums.txt
#   --skip-missing-targets   skip (with a note) a target whose Rust standard
#               library is not installed and cannot be added (no network),
#               instead of failing
# Needs: cargo, rustup targets for each triple, zig and cargo-zigbuild
# (`pip install ziglang cargo-zigbuild`), python3, readelf, sha256sum, tar, gzip.
set -euo pipefail
cd "$(dirname "$0")/.."

GLIBC=2.17
out=dist
record=0
skip_missing=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets+=("${2:?--target needs a triple}"); shift 2 ;;
    --out) out="${2:?--out needs a directory}"; shift 2 ;;
    --record) record=1; shift ;;
    --skip-missing-targets) skip_missing=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ "${#targets[@]}" -gt 0 ] || targets=(x86_64-unknown-linux-gnu)

die() { echo "release.sh: $*" >&2; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"$/\1/p;T;q' Cargo.toml)"
[ -n "$version" ] || die "no version in Cargo.toml"
command -v cargo-zigbuild >/dev/null || die "cargo-zigbuild not found; install it with: pip install ziglang cargo-zigbuild"
zig_version="$(python3 -m ziglang version 2>/dev/null || zig version 2>/dev/null || true)"
[ -n "$zig_version" ] || die "zig not found; install it with: pip install ziglang"
for tool in readelf sha256sum tar gzip python3; do
  command -v "$tool" >/dev/null || die "'$tool' not found"
done

# Reproducibility: one timestamp (the commit's), no absolute build paths.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH="$(git log -1 --format=%ct 2>/dev/null || echo 0)"
fi
export SOURCE_DATE_EPOCH
cargo_home="${CARGO_HOME:-$HOME/.cargo}"
export RUSTFLAGS="${RUSTFLAGS:-} --remap-path-prefix=$PWD=/build/gpugate --remap-path-prefix=$cargo_home=/cargo"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/release-dist}"

mkdir -p "$out"
echo "gate $version; $(rustc --version); zig $zig_version; glibc $GLIBC; SOURCE_DATE_EPOCH=$SOURCE_DATE_EPOCH"
built=()
for target in "${targets[@]}"; do
  case "$target" in
    x86_64-unknown-linux-gnu|aarch64-unknown-linux-gnu) ;;
    *) die "unsupported target '$target' (x86_64-unknown-linux-gnu or aarch64-unknown-linux-gnu)" ;;
  esac
  if command -v rustup >/dev/null && ! rustup target list --installed | grep -x "$target" >/dev/null; then
    if ! rustup target add "$target" >/dev/null 2>&1; then
      msg="the Rust standard library for $target is not installed and 'rustup target add $target' failed (no network?)"
      if [ "$skip_missing" = 1 ]; then
        echo "release.sh: SKIPPED $target: $msg"
        continue
      fi
      die "$msg"
    fi
  fi
  start=$(date +%s)
  cargo zigbuild --locked --release --bin gate --target "$target.$GLIBC"
  bin="$CARGO_TARGET_DIR/$target/release/gate"
  [ -x "$bin" ] || die "no binary at $bin"

  # The newest glibc symbol version the binary needs must be <= 2.17.
  newest="$(readelf -W --version-info "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -n 1)"
  if [ -n "$newest" ] && [ "$(printf '%s\n%s\n' "$newest" "$GLIBC" | sort -t. -k1,1n -k2,2n | tail -n 1)" != "$GLIBC" ]; then
    die "$target: the binary needs GLIBC_$newest, newer than $GLIBC"
  fi

  name="gate-$version-$target"
  stage="$(mktemp -d)"
  mkdir "$stage/$name"
  install -m 0755 "$bin" "$stage/$name/gate"
  install -m 0644 README.md "$stage/$name/README.md"
  install -m 0644 LICENSE "$stage/$name/LICENSE"
  touch -d "@$SOURCE_DATE_EPOCH" "$stage/$name" "$stage/$name"/*
  tar --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
      --format=gnu -C "$stage" -cf - "$name" | gzip -n -9 > "$out/$name.tar.gz"
  rm -rf "$stage"
  echo "built $out/$name.tar.gz in $(( $(date +%s) - start )) s (newest glibc symbol: ${newest:-none})"
  built+=("$name.tar.gz")

  # The wheel around the same, already checked binary (no second compile).
  python3 scripts/wheel.py --binary "$bin" --version "$version" --arch "${target%%-*}" --out "$out"
  built+=("gpugate-$version-py3-none-manylinux_2_17_${target%%-*}.manylinux2014_${target%%-*}.whl")
done

[ "${#built[@]}" -gt 0 ] || die "nothing was built"
(cd "$out" && sha256sum -- "${built[@]}" > SHA256SUMS)
cat "$out/SHA256SUMS"

if [ "$record" = 1 ]; then
  # The list and the GitLab components' copy of it, one way (also the
  # release workflow's).
  scripts/pin-checksums.sh "$out/SHA256SUMS"
fi
