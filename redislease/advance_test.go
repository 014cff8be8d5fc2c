package redislease

import (
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/advancetest"
)

func TestAdvanceLeases(t *testing.T) {
	advancetest.Leases(t, func(tb testing.TB) advancetest.Store { return newRig(tb).Store })
}

// TestAdvanceLeasesKeepsToItsPrefix: a prefix holding glob characters
// finds its own clusters only, not those of a prefix the unquoted pattern
// would match too.
func TestAdvanceLeasesKeepsToItsPrefix(t *testing.T) {
	base := freshPrefix(t)
	mine := New(newTestClient(t), Options{Prefix: base + "a*"})
	theirs := New(newTestClient(t), Options{Prefix: base + "ab"})
	mustAcquire(t, mine, request("mine", "token-mine", 3))
	mustAcquire(t, theirs, request("theirs", "token-theirs", 3))

	floor := time.Now().Add(time.Hour).UnixMilli()
	var clusters []string
	err := mine.AdvanceLeases(t.Context(), floor, false, func(cluster string, _, _, _ int64) {
		clusters = append(clusters, cluster)
	})
	if err != nil {
		t.Fatalf("AdvanceLeases: %v", err)
	}
	if len(clusters) != 1 || clusters[0] != "mine" {
		t.Errorf("AdvanceLeases under %q saw clusters %q, want [mine]", base+"a*", clusters)
	}
	l := mustAcquire(t, theirs, request("theirs", "token-next", 3))
	if l.LastTimestampMS >= floor {
		t.Errorf("the other prefix's worker %d starts after %d: it was raised", l.WorkerID, l.LastTimestampMS)
	}
}

func TestEscapeGlob(t *testing.T) {
	for in, want := range map[string]string{
		"idalloc:workerlease:": "idalloc:workerlease:",
		`a*b?c[d]e\f`:          `a\*b\?c\[d\]e\\f`,
	} {
		if got := escapeGlob(in); got != want {
			t.Errorf("escapeGlob(%q) = %q, want %q", in, got, want)
		}
	}
}
