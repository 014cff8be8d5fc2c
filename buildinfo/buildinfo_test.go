package buildinfo_test

import (
	"runtime"
	"testing"

	"github.com/idalloc/idalloc/buildinfo"
)

// TestRead: what the linker sets wins; without it the build's own stamp,
// else "(devel)" and "unknown" (a test binary has no VCS stamp).
func TestRead(t *testing.T) {
	if got := buildinfo.Read("", ""); got.Version == "" || got.Revision == "" || got.GoVersion != runtime.Version() {
		t.Errorf("without -X: %+v, want a version, a revision and %s", got, runtime.Version())
	}
	got := buildinfo.Read("v1.2.3", "0123abcd")
	if want := (buildinfo.Stamp{Version: "v1.2.3", Revision: "0123abcd", GoVersion: runtime.Version()}); got != want {
		t.Errorf("with -X: %+v, want %+v", got, want)
	}
	if want := "idalloc v1.2.3 (revision 0123abcd, " + runtime.Version() + ")"; got.String() != want {
		t.Errorf("-version line %q, want %q", got.String(), want)
	}
}
