#!/usr/bin/env bash
# Install a PINNED gate release for a CI job: the `gpugate` wheel (the
# glibc-2.17 `gate` binary, scripts/wheel.py), installed by pip with
# --require-hashes and the SHA-256 pinned in ci-templates/release-checksums.txt
# at the version of the template in use. Used by the GitHub action
# (ci-templates/github/action.yml runs this file) and by the GitLab components
# (templates/*.yml carry a byte-identical copy of the part between the
# BEGIN/END markers, because a component cannot ship files; tests/templates.rs
# checks that they stay identical).
#
# It never builds: cargo does not belong on a GPU runner (CUDA images ship no
# Rust toolchain, and a build there takes GPU time). Without a pinned hash it
# fails and says why; the templates' fallback is a build job in a Rust image
# whose artifact the GPU job uses (GitLab: install: build; GitHub: the
# build-gate job of workflows/gpu-gate.yml and gate-binary).
#
# Environment:
#   GATE_VERSION         release to install, e.g. 0.3.0 (required; it must
#                        look like a release version, 1.2.3 or 1.2.3-rc.1)
#   GATE_SHA256          expected SHA-256 of this platform's wheel; default:
#                        its line in GATE_CHECKSUMS_FILE
#   GATE_CHECKSUMS_FILE  release-checksums.txt (sha256  <file name>)
#   GATE_PIP_INDEX_URL   package index to use instead of pip's default (PyPI,
#                        or what the runner's pip.conf says)
#   GATE_PIP_FIND_LINKS  a directory or URL of wheels (a mirror); with it no
#                        index is asked
#   GATE_PYTHON          the Python that makes the virtual environment
#                        (default python3; needs venv, and pip 19.3 or newer,
#                        the first to know the manylinux2014 tag)
#   GATE_CACHE_DIR       kept between jobs: pip's download cache. pip checks
#                        every file it installs, cached or not, against the
#                        pinned hash, so whoever can write the cache cannot
#                        choose the binary.
#   GATE_BIN_DIR         where `gate` is put (prepend it to PATH)
#
# --- BEGIN install-gate ---
gate_install() {
  # No `set -e` here: callers run it as `gate_install || exit`, where bash
  # ignores -e, so every step that can fail says so itself (`|| return`).
  # No `local -` either: CentOS 7 based CUDA images have bash 4.2 (which is
  # also why the empty array below is expanded with ${a[@]+...}).
  local version="${GATE_VERSION:-}" cache="${GATE_CACHE_DIR:?GATE_CACHE_DIR is not set}"
  local bin_dir="${GATE_BIN_DIR:?GATE_BIN_DIR is not set}" expected="${GATE_SHA256:-}" arch=""
  local release_version_re='^[0-9]+[.][0-9]+[.][0-9]+(-[0-9A-Za-z][0-9A-Za-z.-]*)?$'
  if [ -z "$version" ]; then
    echo "gate install: no gate-version given: set it to a released version" >&2
    return 2
  fi
  if ! [[ $version =~ $release_version_re ]]; then
    printf 'gate install: gate-version %q is not a release version like 1.2.3 or 1.2.3-rc.1: refusing it (set gate-version to a released version)\n' "$version" >&2
    return 2
  fi
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64|Linux-amd64) arch=x86_64 ;;
    Linux-aarch64|Linux-arm64) arch=aarch64 ;;
    *)
      echo "gate install: no gate wheel for $(uname -s) $(uname -m) (Linux x86_64 and aarch64 only): use gate-binary" >&2
      return 2
      ;;
  esac
  local wheel="gpugate-$version-py3-none-manylinux_2_17_$arch.manylinux2014_$arch.whl"
  if [ -z "$expected" ] && [ -f "${GATE_CHECKSUMS_FILE:-}" ]; then
    expected="$(awk -v f="$wheel" '$2 == f { print $1 }' "$GATE_CHECKSUMS_FILE")"
  fi
  if [ -z "$expected" ]; then
    echo "gate install: no pinned SHA-256 for $wheel in ${GATE_CHECKSUMS_FILE:-the checksums list}: gate $version has no release pinned at this template version (the list stays empty until the first release is published), so nothing is downloaded. Use the build job fallback (GitLab: install: build; GitHub: the build-gate job and gate-binary), or set gate-sha256 to a sum you verified yourself" >&2
    return 2
  fi
  # sha256sum prints lower case, some tools and release pages upper case:
  # one digest either way (pip compares lower case).
  expected="$(printf '%s' "$expected" | tr 'ABCDEF' 'abcdef')"
  if ! [[ $expected =~ ^[0-9a-f]{64}$ ]]; then
    printf 'gate install: the pinned SHA-256 %q for %s is not 64 hex digits\n' "$expected" "$wheel" >&2
    return 2
  fi
  local py="${GATE_PYTHON:-python3}"
  if ! command -v "$py" >/dev/null; then
    echo "gate install: installing the gpugate wheel needs $py (with venv and pip), which this job does not have: use an image with Python, or gate-binary" >&2
    return 2
  fi
  mkdir -p "$bin_dir" "$cache" || return 2
  local tmp
  tmp="$(mktemp -d)" || return 2
  if ! "$py" -m venv "$tmp/venv" >"$tmp/log" 2>&1; then
    echo "gate install: '$py -m venv' failed: $(tr '\n' ' ' < "$tmp/log" | cut -c1-300)" >&2
    rm -rf "$tmp"
    return 2
  fi
  printf 'gpugate==%s --hash=sha256:%s\n' "$version" "$expected" > "$tmp/requirements.txt"
  local source=()
  if [ -n "${GATE_PIP_FIND_LINKS:-}" ]; then
    source=(--no-index --find-links "$GATE_PIP_FIND_LINKS")
  elif [ -n "${GATE_PIP_INDEX_URL:-}" ]; then
    source=(--index-url "$GATE_PIP_INDEX_URL")
  fi
  echo "installing $wheel with pip --require-hashes (sha256 $expected)"
  if ! PIP_CACHE_DIR="$cache/pip" "$tmp/venv/bin/python" -m pip install --disable-pip-version-check \
    --quiet --no-deps --only-binary :all: --require-hashes ${source[@]+"${source[@]}"} \
    -r "$tmp/requirements.txt" >"$tmp/log" 2>&1; then
    echo "gate install: pip did not install gpugate $version with the pinned SHA-256 (another file than the release, no wheel for this platform, pip older than 19.3, or no index reachable); nothing was installed. pip said: $(tr '\n' ' ' < "$tmp/log" | cut -c1-600)" >&2
    rm -rf "$tmp"
    return 2
  fi
  if ! install -m 0755 "$tmp/venv/bin/gate" "$bin_dir/gate"; then
    rm -rf "$tmp"
    return 2
  fi
  rm -rf "$tmp"
  local said
  said="$("$bin_dir/gate" --version 2>&1)"
  if [ "$said" != "gate $version" ]; then
    echo "gate install: the installed gate says '$said', not 'gate $version'" >&2
    rm -f "$bin_dir/gate"
    return 2
  fi
  echo "gate $version: $wheel verified (sha256 $expected) and installed"
}
# --- END install-gate ---

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  gate_install || exit $?
  "$GATE_BIN_DIR/gate" --version
fi
