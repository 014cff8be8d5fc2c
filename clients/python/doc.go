// Package python holds idalloc's Python client, idalloc_client.py, a thin
// wrapper of the stubs generated from proto/idalloc/v1/idalloc.proto
// (docs/api.md §14), and its tests: they generate the stubs with
// gen-stubs.sh, start the idalloc binary with grpc_addr set, and run
// example.py and bench.py against it with Debian's python3
// (python3-grpcio, python3-grpc-tools, protobuf-compiler). It has no Go
// code of its own: docs/clients.md is the page for Python users.
package python
