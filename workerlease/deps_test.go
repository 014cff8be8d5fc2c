package workerlease

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestDependencies keeps workerlease a root package: it may import the
// standard library and the error vocabulary (errs) only, never snowflake,
// segment, server, store or any other package of this module (their adapters import it, not the other
// way round; see STYLE.md §1).
func TestDependencies(t *testing.T) {
	const module = "github.com/idalloc/idalloc/"
	const self = module + "workerlease"
	const vocabulary = module + "errs" // every package may speak it
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("no go command to list dependencies with")
		}
	}
	out, err := exec.Command(gobin, "list", "-deps", self).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", self, err)
	}
	var deps int
	for _, dep := range strings.Fields(string(out)) {
		deps++
		if strings.HasPrefix(dep, module) && dep != self && dep != vocabulary {
			t.Errorf("workerlease depends on %s, want no package of this module but itself and the vocabulary", dep)
		}
	}
	if deps == 0 {
		t.Errorf("go list -deps %s listed nothing", self)
	}
}
