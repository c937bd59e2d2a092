#!/usr/bin/env bash
# Install a PINNED gate release for a CI job, verified by its SHA-256, with a
# build from source as the fallback. Used by the GitHub action
# (ci-templates/github/action.yml runs this file) and by the GitLab components
# (templates/*.yml carry a byte-identical copy of the part between the
# BEGIN/END markers, because a component cannot ship files; tests/templates.rs
# checks that they stay identical).
#
# Environment (all optional but GATE_VERSION or GATE_SOURCE_DIR):
#   GATE_VERSION         release to install, e.g. 0.1.0
#   GATE_SHA256          expected SHA-256 of this platform's archive; default:
#                        its line in GATE_CHECKSUMS_FILE
#   GATE_CHECKSUMS_FILE  release-checksums.txt (sha256  gate-<v>-<target>.tar.gz)
#   GATE_RELEASE_URL     base URL; the archive is
#                        $GATE_RELEASE_URL/v<version>/gate-<version>-<target>.tar.gz
#   GATE_SOURCE_DIR      gate's own source (Cargo.toml) to build from when no
#                        verified archive can be had
#   GATE_SOURCE_GIT      git URL of gate's repository: when GATE_SOURCE_DIR is
#                        unset, tag v<version> is cloned (into the cache) to
#                        build from
#   GATE_CACHE_DIR       kept between jobs (tool cache / CI cache): binaries
#                        by version and target, and cargo's build directory
#   GATE_BIN_DIR         where `gate` is put (prepend it to PATH)
#
# Order: the cached release archive of that version, re-verified against the
# pinned SHA-256 on every use (a binary is never run or copied from the cache
# unverified: whoever can write the cache must not choose the binary); else
# the release archive, but only when its expected SHA-256 is known (never an
# unverified download); else a build from GATE_SOURCE_DIR with cargo (its
# build directory in the cache makes a rebuild a no-op). A checksum MISMATCH
# of a download is an error, never a reason to fall back: it means the
# download is not the release. GATE_VERSION must look like a release version
# (1.2.3, 1.2.3-rc.1): it names directories in the cache and a git tag.
#
# --- BEGIN install-gate ---
gate_install() {
  # No `set -e` here: callers run it as `gate_install || exit`, where bash
  # ignores -e, so every step that can fail says so itself (`|| return`).
  # No `local -` either: CentOS 7 based CUDA images have bash 4.2.
  local version="${GATE_VERSION:-}" cache="${GATE_CACHE_DIR:?GATE_CACHE_DIR is not set}"
  local bin_dir="${GATE_BIN_DIR:?GATE_BIN_DIR is not set}" target="" expected="${GATE_SHA256:-}"
  # The version becomes a cache path and a tag: no '/', no '..' component.
  local release_version_re='^[0-9]+[.][0-9]+[.][0-9]+(-[0-9A-Za-z][0-9A-Za-z.-]*)?([+][0-9A-Za-z.-]+)?$'
  if [ -n "$version" ] && ! [[ $version =~ $release_version_re ]]; then
    printf 'gate install: gate-version %q is not a release version like 0.1.0 or 1.2.3-rc.1: refusing it (set gate-version to a released version)\n' "$version" >&2
    return 2
  fi
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64|Linux-amd64) target=x86_64-unknown-linux-gnu ;;
    Linux-aarch64|Linux-arm64) target=aarch64-unknown-linux-gnu ;;
  esac
  mkdir -p "$bin_dir" "$cache" || return 2
  local slot="$cache/${version:-source}/${target:-$(uname -m)}"
  local archive="gate-$version-$target.tar.gz"
  if [ -n "$version" ] && [ -n "$target" ] && [ -z "$expected" ] && [ -f "${GATE_CHECKSUMS_FILE:-}" ]; then
    expected="$(awk -v f="$archive" '$2 == f { print $1 }' "$GATE_CHECKSUMS_FILE")"
  fi
  local tmp actual
  tmp="$(mktemp -d)" || return 2
  # The cache keeps the verified archive, not a bare binary: its SHA-256 is
  # checked again (on a private copy, so it cannot change after the check)
  # before anything in it is copied or run.
  if [ -n "$version" ] && [ -n "$target" ] && [ -n "$expected" ] && [ -f "$slot/$archive" ]; then
    cp "$slot/$archive" "$tmp/$archive" || { rm -rf "$tmp"; return 2; }
    actual="$(sha256sum "$tmp/$archive" | cut -d' ' -f1)"
    if [ "$actual" = "$expected" ] && tar -xzf "$tmp/$archive" -C "$tmp" \
      && install -m 0755 "$tmp/gate-$version-$target/gate" "$bin_dir/gate"; then
      rm -rf "$tmp"
      echo "gate $version from the cache ($slot/$archive, sha256 $expected verified)"
      return 0
    fi
    if [ "$actual" != "$expected" ]; then
      echo "gate install: the cached $archive has SHA-256 $actual, not the pinned $expected: discarding it and downloading the release again" >&2
    else
      echo "gate install: the cached $archive does not hold gate-$version-$target/gate: discarding it" >&2
    fi
    rm -f "$slot/$archive" "$tmp/$archive"
  fi
  local why=""
  if [ -z "$version" ]; then
    why="no gate-version given"
  elif [ -z "$target" ]; then
    why="no release archive for $(uname -s) $(uname -m)"
  elif [ -z "$expected" ]; then
    why="no pinned SHA-256 for $archive (not in the checksums list; set gate-sha256 to pin one)"
  elif [ -z "${GATE_RELEASE_URL:-}" ]; then
    why="no release URL known (set the input release-url)"
  else
    local url="$GATE_RELEASE_URL/v$version/$archive"
    echo "downloading $url"
    if curl --fail --silent --show-error --location --retry 3 --output "$tmp/$archive" "$url" 2>"$tmp/err" \
      || wget -q -O "$tmp/$archive" "$url" 2>>"$tmp/err"; then
      actual="$(sha256sum "$tmp/$archive" | cut -d' ' -f1)"
      if [ "$actual" != "$expected" ]; then
        echo "gate install: SHA-256 of $archive is $actual, expected $expected: refusing it (not the pinned release)" >&2
        rm -rf "$tmp"
        return 2
      fi
      if ! { tar -xzf "$tmp/$archive" -C "$tmp" \
        && install -m 0755 "$tmp/gate-$version-$target/gate" "$bin_dir/gate"; }; then
        echo "gate install: $archive does not hold gate-$version-$target/gate" >&2
        rm -rf "$tmp"
        return 2
      fi
      # Cached for the next job; it is verified again when used.
      mkdir -p "$slot" && cp "$tmp/$archive" "$slot/$archive.part" && mv "$slot/$archive.part" "$slot/$archive" \
        || echo "gate install: note: could not cache $archive in $slot"
      rm -rf "$tmp"
      echo "gate $version: $archive verified (sha256 $expected)"
      return 0
    fi
    why="download failed: $(tr '\n' ' ' < "$tmp/err" | cut -c1-200)"
  fi
  rm -rf "$tmp"
  # Fallback: build from source. Never served from a cached binary: cargo's
  # build directory in the cache makes the rebuild of an unchanged tree quick.
  if [ -z "${GATE_SOURCE_DIR:-}" ] && [ -n "${GATE_SOURCE_GIT:-}" ] && [ -n "$version" ]; then
    GATE_SOURCE_DIR="$cache/src/$version"
    if [ ! -f "$GATE_SOURCE_DIR/Cargo.toml" ]; then
      rm -rf "$GATE_SOURCE_DIR"
      echo "cloning tag v$version of $GATE_SOURCE_GIT"
      git clone --quiet --depth 1 --branch "v$version" "$GATE_SOURCE_GIT" "$GATE_SOURCE_DIR" \
        || { echo "gate install: $why, and cloning tag v$version of $GATE_SOURCE_GIT failed" >&2; return 2; }
    fi
  fi
  if [ -z "${GATE_SOURCE_DIR:-}" ] || [ ! -f "$GATE_SOURCE_DIR/Cargo.toml" ]; then
    echo "gate install: $why, and no source to build from (GATE_SOURCE_DIR / GATE_SOURCE_GIT); set gate-binary, or gate-version with a released version" >&2
    return 2
  fi
  if ! command -v cargo >/dev/null; then
    echo "gate install: $why; building from source needs cargo (a Rust toolchain), which this job does not have: use a released version or gate-binary" >&2
    return 2
  fi
  echo "building gate from $GATE_SOURCE_DIR ($why)"
  local src_version
  src_version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$GATE_SOURCE_DIR/Cargo.toml" | head -n 1)"
  if [ -n "$version" ] && [ "$src_version" != "$version" ]; then
    echo "gate install: note: the source is gate $src_version, not $version"
  fi
  CARGO_TARGET_DIR="$cache/build" cargo build --locked --release --bin gate \
    --manifest-path "$GATE_SOURCE_DIR/Cargo.toml" \
    || { echo "gate install: building gate from $GATE_SOURCE_DIR failed" >&2; return 2; }
  install -m 0755 "$cache/build/release/gate" "$bin_dir/gate" || return 2
}
# --- END install-gate ---

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  gate_install || exit $?
  "$GATE_BIN_DIR/gate" --version
fi
