package server

import (
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/idalloc/idalloc/internal/openapitest"
)

// docs/openapi.yaml is held true two ways, in a test binary built with
// -tags openapi (.ci/run builds one; without it both are off).
// TestOpenAPIListsEveryRoute compares its routes with the router's.
// TestMain checks every answer the package's tests receive against it: New wraps each Server's handler
// (testHandler), and an answer the description does not allow fails the
// test binary, naming the test that made the request when it is on the
// stack (it is not for a request that came over a listener).

var (
	mismatchMu sync.Mutex
	mismatches []string
)

func TestMain(m *testing.M) {
	flag.Parse()
	spec, err := openapitest.Default()
	switch {
	case errors.Is(err, openapitest.ErrOff):
		spec = nil
	case err != nil:
		fmt.Fprintln(os.Stderr, "docs/openapi.yaml:", err)
		os.Exit(1)
	}
	// Benchmarks measure the server, not the check.
	if f := flag.Lookup("test.bench"); spec != nil && (f == nil || f.Value.String() == "") {
		testHandler = checked(spec)
	}
	code := m.Run()
	if len(mismatches) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d answers do not match docs/openapi.yaml:\n", len(mismatches))
		for _, m := range mismatches {
			fmt.Fprintln(os.Stderr, m)
		}
		code = 1
	}
	if testing.Verbose() && testHandler != nil {
		report(spec)
	}
	os.Exit(code)
}

// report prints what the check saw: the answers of each route and status,
// and the routes no test asked.
func report(spec *openapitest.Spec) {
	seen := spec.Seen()
	asked := map[string]bool{}
	var answers []string
	n := 0
	for a, c := range seen {
		asked[a.Method+" "+a.Route] = true
		answers = append(answers, fmt.Sprintf("%s ×%d", a, c))
		n += c
	}
	slices.Sort(answers)
	var unasked []string
	routes := spec.Routes()
	for _, r := range routes {
		if !asked[r] {
			unasked = append(unasked, r)
		}
	}
	fmt.Printf("openapi: %d answers checked against docs/openapi.yaml, %d distinct route and status; %d of its %d routes asked\n\t%s\n",
		n, len(seen), len(routes)-len(unasked), len(routes), strings.Join(answers, "\n\t"))
	if len(unasked) > 0 {
		fmt.Printf("openapi: routes no test asked:\n\t%s\n", strings.Join(unasked, "\n\t"))
	}
}

// checked wraps a Server's handler: each exchange is checked against spec.
func checked(spec *openapitest.Spec) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x := openapitest.Serve(h, w, r)
			if readsJSON(r) {
				// What the server read, whatever the Content-Type said
				// (docs/api.md §2): curl -d sends a form type. On a copy:
				// a test may send r again.
				x.Request = r.Clone(r.Context())
				x.Request.Header.Set("Content-Type", "application/json")
			}
			if err := spec.Check(x); err != nil {
				mismatchMu.Lock()
				mismatches = append(mismatches, callingTest()+": "+err.Error())
				mismatchMu.Unlock()
			}
		})
	}
}

// readsJSON reports whether the server reads r's body as JSON, whatever its
// Content-Type: every body of its own routes; Leaf's and Tinyid's read
// forms.
func readsJSON(r *http.Request) bool {
	if r.Method != http.MethodPost && r.Method != http.MethodPatch {
		return false
	}
	for _, compat := range []string{"/api/", "/tinyid/", "/decodeSnowflakeId"} {
		if strings.HasPrefix(r.URL.Path, compat) {
			return false
		}
	}
	return true
}

// callingTest names the test or benchmark on the stack, for a request
// served in its goroutine.
func callingTest() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		name := f.Function[strings.LastIndexByte(f.Function, '/')+1:]
		if (strings.HasPrefix(name, "server.Test") && !strings.HasPrefix(name, "server.TestMain")) || strings.HasPrefix(name, "server.Benchmark") {
			return strings.TrimPrefix(name, "server.")
		}
		if !more {
			return "a request over a listener"
		}
	}
}

// TestOpenAPIListsEveryRoute holds docs/openapi.yaml's paths to the
// router's: every method and pattern the router serves is described, and
// every one described is served.
func TestOpenAPIListsEveryRoute(t *testing.T) {
	spec, err := openapitest.Default()
	if errors.Is(err, openapitest.ErrOff) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	err = chi.Walk(newRig(t, nil).srv.router(), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	described := map[string]bool{}
	for _, r := range spec.Routes() {
		described[r] = true
		if !served[r] {
			t.Errorf("docs/openapi.yaml describes %s, which the router does not serve", r)
		}
	}
	for r := range served {
		if !described[r] {
			t.Errorf("the router serves %s, which docs/openapi.yaml does not describe", r)
		}
	}
	if len(served) == 0 {
		t.Fatal("chi.Walk found no route")
	}
}
