#!/usr/bin/env bash
# gen-proto.sh: generates the Go code of idalloc's gRPC schema
# (proto/idalloc/v1/idalloc.proto: idalloc.pb.go, idalloc_grpc.pb.go beside
# it) with the pinned generators, so that the committed code is what this
# script makes. grpcapi's TestGeneratedCodeIsCurrent runs it with -check.
#
#   scripts/gen-proto.sh          regenerate the files in place
#   scripts/gen-proto.sh -check   exit 1, showing the diff, when the committed
#                                 files are not what it generates
#
# protoc is Debian 12's protobuf-compiler (apt-get install protobuf-compiler);
# another version writes another version line, so it is refused. The two
# plugins are installed at their pinned versions into a temporary GOBIN
# (the module proxy or cache, not go.mod).
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_VERSION="libprotoc 3.21.12"
PROTOC_GEN_GO=google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12
PROTOC_GEN_GO_GRPC=google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.5.1
DIR=proto/idalloc/v1

check=false
case "${1:-}" in
  -check) check=true ;;
  "") ;;
  *) echo "usage: $0 [-check]" >&2; exit 2 ;;
esac

command -v protoc >/dev/null || { echo "gen-proto: protoc not found: apt-get install protobuf-compiler" >&2; exit 2; }
got=$(protoc --version)
[ "$got" = "$PROTOC_VERSION" ] || { echo "gen-proto: $got, want $PROTOC_VERSION (Debian 12's protobuf-compiler)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
GOBIN="$tmp/bin" go install "$PROTOC_GEN_GO"
GOBIN="$tmp/bin" go install "$PROTOC_GEN_GO_GRPC"

mkdir -p "$tmp/out"
protoc -I proto --plugin=protoc-gen-go="$tmp/bin/protoc-gen-go" --plugin=protoc-gen-go-grpc="$tmp/bin/protoc-gen-go-grpc" \
  --go_out="$tmp/out" --go_opt=paths=source_relative \
  --go-grpc_out="$tmp/out" --go-grpc_opt=paths=source_relative \
  idalloc/v1/idalloc.proto

if $check; then
  status=0
  for f in idalloc.pb.go idalloc_grpc.pb.go; do
    diff -u "$DIR/$f" "$tmp/out/idalloc/v1/$f" || status=1
  done
  [ "$status" -eq 0 ] || echo "gen-proto: $DIR is not what $DIR/idalloc.proto generates: run scripts/gen-proto.sh" >&2
  exit "$status"
fi
cp "$tmp/out/idalloc/v1/idalloc.pb.go" "$tmp/out/idalloc/v1/idalloc_grpc.pb.go" "$DIR/"
