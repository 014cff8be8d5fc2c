#!/usr/bin/env bash
# gen-stubs.sh: generates the Python stubs of idalloc's gRPC schema
# (proto/idalloc/v1/idalloc.proto) into OUT, as the package idalloc.v1
# (OUT/idalloc/v1/idalloc_pb2.py and idalloc_pb2_grpc.py), for the Python
# that PYTHON names (python3 by default). Put OUT on PYTHONPATH beside
# idalloc_client.py.
#
#   clients/python/gen-stubs.sh OUT
#   PYTHON=/usr/bin/python3 clients/python/gen-stubs.sh OUT
#
# Two steps, so that Debian 12's packages serve: its python3-grpc-tools
# (1.14) compiles with a protoc of 2018 that refuses proto3's "optional",
# which the schema uses. protoc (protobuf-compiler, the protoc of
# python3-protobuf's own release) writes the messages and a descriptor
# set; grpc_tools writes the service stub from that descriptor set
# without parsing the .proto. A current grpcio-tools does the same.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 OUT" >&2; exit 2; }
out=$1
proto="$(cd "$(dirname "$0")/../../proto" && pwd)"
python=${PYTHON:-python3}

command -v protoc >/dev/null || { echo "gen-stubs: protoc not found: apt-get install protobuf-compiler" >&2; exit 2; }
mkdir -p "$out"
protoc -I "$proto" --python_out="$out" --descriptor_set_out="$out/idalloc.desc" idalloc/v1/idalloc.proto
# grpc_tools.protoc's own main adds an -I, which --descriptor_set_in
# refuses: call its compiler directly.
(cd "$out" && "$python" -c '
import sys
from grpc_tools import protoc
sys.exit(protoc.main(["protoc", "--descriptor_set_in=idalloc.desc", "--grpc_python_out=.", "idalloc/v1/idalloc.proto"]))
')
rm "$out/idalloc.desc"
