// Package openapitest checks HTTP exchanges against docs/openapi.yaml, the
// HTTP API's OpenAPI 3.1 description, with libopenapi-validator: an
// answer's status, headers and body against its route's responses, and a
// request the server accepted against its route's parameters, body and
// security. A request the server refused is not checked, since a test may
// have sent bad input on purpose; its answer is.
//
// A path the description does not list must be answered as
// components.responses.UnknownRoute says, and a listed path asked with a
// method it does not list as components.responses.MethodNotAllowed: the
// router's own answers to what it does not serve (docs/api.md §2).
//
// The description is read and compiled once per test binary (Default);
// a Spec is safe for concurrent use. The check is built with -tags openapi
// (.ci/run sets it); without it Load answers ErrOff.
package openapitest

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime"
	"sync"
)

// ErrOff is Load's error in a test binary built without -tags openapi:
// the validator's packages are a large compile the fast tier leaves out.
// The tests that check against the description skip, or check nothing,
// on it; .ci/run builds with the tag.
var ErrOff = errors.New("the OpenAPI check is built with -tags openapi only (as .ci/run does)")

// Answer is a route and a status it answered: Route is the description's
// path template, or "" for a path it does not list.
type Answer struct {
	Method, Route string
	Status        int
}

func (a Answer) String() string {
	route := a.Route
	if route == "" {
		route = "(a path not listed)"
	}
	return fmt.Sprintf("%s %s %d", a.Method, route, a.Status)
}

// Path is docs/openapi.yaml's path on this machine, found from this
// file's, so that tests of any package find it.
func Path() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "docs", "openapi.yaml")
}

// Default is docs/openapi.yaml, loaded once per test binary.
var Default = sync.OnceValues(func() (*Spec, error) { return Load(Path()) })

// Exchange is one request and its answer as the server saw them.
type Exchange struct {
	// Request is the request as served; its Body is not read (see
	// RequestBody).
	Request *http.Request
	// RequestBody is what the handler read of the request's body.
	RequestBody []byte
	Status      int
	Header      http.Header
	Body        []byte
}
