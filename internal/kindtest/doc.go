// Package kindtest reaches every kind of the error vocabulary (package
// errs, docs/api.md §2) through real requests to every front end, HTTP
// (package server), RESP (package resp) and gRPC (package grpcapi), on one
// real instance on a SQLite store, from one table: kinds_test.go. The front
// ends never import each other, so the test that holds them to one table
// lives here, where all may be imported. It has no code of its own.
package kindtest
