#!/usr/bin/env bash
# Pin the SHA-256 of a release's archives and wheels where the install step
# of the GitHub action and of the GitLab components reads them:
# ci-templates/release-checksums.txt (one line per file of every released
# version; older versions stay) and the copy of it between
# "# --- BEGIN release-checksums ---" and "# --- END release-checksums ---"
# in templates/gate-check.yml and templates/gate-capture.yml
# (tests/templates.rs keeps the three equal).
#
# Run by scripts/release.sh --record, and by the release workflow
# (.github/workflows/release.yml) when it runs on a commit whose version
# has no sums pinned yet: it pins them, commits, tags and publishes.
#
# Usage: scripts/pin-checksums.sh SHA256SUMS [--root DIR]
#   SHA256SUMS  sha256sum lines of gate-<version>-*.tar.gz and
#               gpugate-<version>-*.whl
#   --root      the repository to write in (default: this one)
set -euo pipefail

sums_in="${1:?usage: pin-checksums.sh SHA256SUMS [--root DIR]}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${2:-}" = "--root" ]; then
  root="${3:?--root needs a directory}"
fi
die() { echo "pin-checksums.sh: $*" >&2; exit 1; }

# Only well-formed lines of released files: 64 hex digits, two spaces,
# an archive or a wheel name.
fresh="$(grep -E '^[0-9a-f]{64}  (gate-[^ /]+\.tar\.gz|gpugate-[^ /]+\.whl)$' "$sums_in" || true)"
[ -n "$fresh" ] || die "no sums of gate archives or wheels in '$sums_in'"
versions="$(echo "$fresh" | sed -E 's/^[0-9a-f]{64}  (gate|gpugate)-([^-]+)-.*/\2/' | sort -u)"
[ "$(echo "$versions" | wc -l)" = 1 ] || die "'$sums_in' holds sums of several versions: $(echo $versions)"
version="$versions"

list="$root/ci-templates/release-checksums.txt"
tmp="$(mktemp)"
trap 'rm -f "$tmp"' EXIT
{
  grep -v -e '^#' -e " gate-$version-" -e " gpugate-$version-" "$list" 2>/dev/null | grep -v '^$' || true
  echo "$fresh"
} | sort -k2 > "$tmp"
{
  echo "# SHA-256 of gate's release archives and wheels, written by scripts/release.sh"
  echo "# --record before the release is tagged; the install step of the GitHub action"
  echo "# and of the GitLab components installs the wheel with pip --require-hashes"
  echo "# and this sum, and refuses a version that has none here."
  cat "$tmp"
} > "$list"

for t in "$root/templates/gate-check.yml" "$root/templates/gate-capture.yml"; do
  grep -q '# --- BEGIN release-checksums ---' "$t" || die "$t has no release-checksums block"
  python3 - "$t" "$tmp" <<'PY'
import sys
path, sums = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
begin = next(i for i, l in enumerate(lines) if l.strip() == "# --- BEGIN release-checksums ---")
end = next(i for i, l in enumerate(lines) if l.strip() == "# --- END release-checksums ---")
indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
pinned = [indent + l for l in open(sums).read().split("\n") if l.strip()]
lines[begin + 1 : end] = pinned
open(path, "w").write("\n".join(lines))
PY
done
echo "pinned the sums of gate $version in ci-templates/release-checksums.txt and the GitLab components"
