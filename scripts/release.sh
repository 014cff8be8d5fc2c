#!/usr/bin/env bash
# release.sh: builds idalloc's release archives and their checksums.
#
#   scripts/release.sh v0.1.0
#
# For linux/amd64, linux/arm64 and darwin/arm64 it builds a binary without
# cgo (CGO_ENABLED=0: the embedded SQLite store is pure Go; static on Linux,
# while on macOS every program links the system's libSystem) with -trimpath
# and the version and revision stamped in (`idalloc -version`, the metric
# idalloc_build_info), as deploy/Dockerfile stamps an image's:
#
#   -ldflags "-s -w -X main.version=VERSION -X main.revision=$(git rev-parse HEAD)"
#
# and packs it with LICENSE, NOTICE, README.md and config.json into
# dist/idalloc_VERSION_OS_ARCH.tar.gz (one directory of that name inside;
# the directory itself is left in dist/ too), then writes dist/SHA256SUMS in
# sha256sum's format, over this version's archives. It prints what it made.
# CONTRIBUTING.md ("Releasing") says what to do before and after.
#
# A shell script rather than goreleaser: it needs nothing beyond what
# building idalloc needs (Go, git) and tar, gzip and sha256sum (or shasum,
# as macOS has), so anyone can make or check a release from a clone.
#
# It refuses a VERSION that is not vX.Y.Z or vX.Y.Z-pre (semantic
# versioning, as docs/versioning.md applies it), and a tree with changes
# not committed, which would not be the revision stamped, unless
# ALLOW_DIRTY=1; such a build's revision says so ("<commit>-dirty").
#
# Environment:
#   ALLOW_DIRTY=1   build from a tree with uncommitted changes
#   TARGETS         "os/arch ..." to build (default: the three above)
#   DIST            where to write (default: dist/ in the repository; it is
#                   in .gitignore); only this version's files are replaced
set -euo pipefail

die() { printf 'release: %s\n' "$*" >&2; exit 1; }
say() { printf 'release: %s\n' "$*"; }

[ $# -eq 1 ] || die "usage: scripts/release.sh VERSION (vX.Y.Z or vX.Y.Z-pre, e.g. v0.1.0)"
version=$1
semver='^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$'
[[ $version =~ $semver ]] || die "version \"$version\" is not vX.Y.Z or vX.Y.Z-pre (v0.1.0, v1.2.0-rc.1)"

cd "$(dirname "$0")/.."
root=$(pwd)
command -v go >/dev/null || die "no go command on PATH"
git rev-parse --git-dir >/dev/null 2>&1 || die "not a git checkout: the revision to stamp comes from git"

revision=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain)" ]; then
  [ "${ALLOW_DIRTY:-}" = 1 ] || die "the tree has changes not committed (git status); commit them, or ALLOW_DIRTY=1 to build anyway (the revision then says -dirty)"
  revision=$revision-dirty
  say "building from a tree with changes not committed: revision $revision"
fi
# Notes, not refusals: a test build need not be tagged or in the changelog.
if [ "$(git rev-parse -q --verify "refs/tags/$version^{commit}" 2>/dev/null)" != "$(git rev-parse HEAD)" ]; then
  say "note: $version is not a tag of this commit (git tag -a $version -m $version)"
fi
if ! grep -q "^## \[${version#v}\]" CHANGELOG.md; then
  say "note: CHANGELOG.md has no section \"## [${version#v}]\""
fi

if command -v sha256sum >/dev/null; then
  sha256() { sha256sum "$@"; }
elif command -v shasum >/dev/null; then
  sha256() { shasum -a 256 "$@"; }
else
  die "neither sha256sum nor shasum is installed"
fi
# GNU tar can make the archive the same bytes on every run: files in name
# order, owned by 0:0, dated at the commit. Other tars pack as they do.
mtime=$(git log -1 --format=%ct)
tar_opts=()
if tar --version 2>/dev/null | grep -q 'GNU tar'; then
  tar_opts=(--sort=name --owner=0 --group=0 --numeric-owner "--mtime=@$mtime")
fi

dist=${DIST:-$root/dist}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
rm -rf "$dist"/idalloc_"$version"_* "$dist/SHA256SUMS"

targets=${TARGETS:-linux/amd64 linux/arm64 darwin/arm64}
ldflags="-s -w -X main.version=$version -X main.revision=$revision"
archives=()
for target in $targets; do
  goos=${target%/*} goarch=${target#*/}
  name=idalloc_${version}_${goos}_${goarch}
  dir=$dist/$name
  mkdir -p "$dir"
  say "building $name"
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags="$ldflags" -o "$dir/idalloc" .
  cp LICENSE NOTICE README.md config.json "$dir/"
  tar "${tar_opts[@]}" -C "$dist" -cf - "$name" | gzip -9n >"$dist/$name.tar.gz"
  archives+=("$name.tar.gz")
done
(cd "$dist" && sha256 "${archives[@]}" >SHA256SUMS)

say "made, in $dist:"
(cd "$dist" && ls -l "${archives[@]}" SHA256SUMS | awk '{printf "  %10s  %s\n", $5, $NF}')
say "SHA256SUMS:"
sed 's/^/  /' "$dist/SHA256SUMS"
say "check one with: sha256sum --check --ignore-missing SHA256SUMS"
