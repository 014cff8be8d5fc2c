package redislease

import (
	"errors"
	"testing"

	"github.com/idalloc/idalloc/internal/redistest"
)

// TestCheckPersistence asks private Redis servers run three ways whether
// they keep leases on disk: the start-up warning's three answers.
func TestCheckPersistence(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
	}{
		{"no save, no append-only file", nil, ErrNotPersistent},
		{"append-only file", []string{"--appendonly", "yes"}, nil},
		{"save points", []string{"--save", "900 1"}, nil},
		{"CONFIG refused, as by a managed Redis", []string{"--rename-command", "CONFIG", ""}, ErrPersistenceUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Start(t, tt.args...)
			st, err := Open("redis://"+srv.Addr()+"/0", Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer st.Close()
			if err := st.CheckPersistence(t.Context()); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("CheckPersistence() = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		st, err := Open("redis://"+closedAddr(t)+"/0", Options{})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		defer st.Close()
		err = st.CheckPersistence(t.Context())
		if err == nil || errors.Is(err, ErrNotPersistent) || errors.Is(err, ErrPersistenceUnknown) {
			t.Errorf("CheckPersistence() on a closed port = %v, want a plain fault", err)
		}
	})
}
