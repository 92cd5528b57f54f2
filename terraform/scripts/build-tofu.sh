#!/usr/bin/env bash
# Build OpenTofu from the Go module proxy into a cache outside git, once.
#
#   terraform/scripts/build-tofu.sh VERSION DEST_DIR
#
# `go install` refuses OpenTofu (its go.mod has a replace directive), so the module is
# downloaded, copied to a writable place and built there (~6 min on 2 cores, at nice 10).
# A warm run (DEST_DIR/tofu present and answering `version`) costs nothing.  The Go module
# and build caches are Go's own (~/go/pkg/mod, ~/.cache/go-build), also outside git.
set -euo pipefail
version=${1:?usage: build-tofu.sh VERSION DEST_DIR}
dest=${2:?usage: build-tofu.sh VERSION DEST_DIR}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}

if [ -x "$dest/tofu" ] && "$dest/tofu" version >/dev/null 2>&1; then
  exit 0
fi
mkdir -p "$dest"
exec 9>"$dest/.build-lock"   # one builder at a time; a second one waits, then finds the binary
flock 9
if [ -x "$dest/tofu" ] && "$dest/tofu" version >/dev/null 2>&1; then
  exit 0
fi
work=$(mktemp -d "$dest/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
echo "building OpenTofu v$version into $dest (once; ~6 min on 2 cores)" >&2
src=$(cd "$work" && GOFLAGS=-mod=mod "$GO" mod download -json "github.com/opentofu/opentofu@v$version" \
      | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "build-tofu.sh: go mod download gave no module directory" >&2; exit 1; }
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
(cd "$work/src" && nice -n 10 "$GO" build -trimpath -o "$work/tofu" ./cmd/tofu)
mv "$work/tofu" "$dest/tofu"      # same file system: the binary appears whole or not at all
"$dest/tofu" version
