package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestError(t *testing.T) {
	sentinel := E(BadRequest, "step", "must be from 1 to the maximum", nil)
	perCall := E(BadRequest, "step", "must be from 1 to 1000000", sentinel)
	tests := []struct {
		name string
		err  error
		msg  string
		kind Kind
	}{
		{"bad request names its field", perCall, "invalid step: must be from 1 to 1000000", BadRequest},
		{"another kind keeps its words", E(UnknownTag, "app_tag", "unknown app_tag", nil), "unknown app_tag", UnknownTag},
		{"wrapped", fmt.Errorf("create: %w", perCall), "create: invalid step: must be from 1 to 1000000", BadRequest},
		{"a fault", errors.New("dial tcp: refused"), "dial tcp: refused", Internal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.msg {
				t.Errorf("Error() = %q, want %q", got, tt.msg)
			}
			if got := KindOf(tt.err); got != tt.kind {
				t.Errorf("KindOf = %q, want %q", got, tt.kind)
			}
		})
	}
	if !errors.Is(perCall, sentinel) {
		t.Errorf("a per-call error is not its sentinel for errors.Is")
	}
	if e, ok := Describe(fmt.Errorf("x: %w", perCall)); !ok || e != perCall {
		t.Errorf("Describe = %v, %v; want the per-call error", e, ok)
	}
}

// TestKindsAreTheContracts: each Kind is spelt as docs/api.md §2 lists it, and
// Kinds lists each once.
func TestKindsAreTheContracts(t *testing.T) {
	want := []string{"bad_request", "unknown_tag", "unknown_route", "unavailable", "draining",
		"clock_backwards", "no_worker_id", "token_mismatch", "lease_expired", "not_assigned",
		"unauthorized", "forbidden", "internal", "method_not_allowed", "exists", "exhausted",
		"period_exhausted"}
	got := Kinds()
	if len(got) != len(want) {
		t.Fatalf("Kinds() has %d kinds, want %d", len(got), len(want))
	}
	for i, k := range got {
		if string(k) != want[i] {
			t.Errorf("Kinds()[%d] = %q, want %q", i, k, want[i])
		}
	}
}
