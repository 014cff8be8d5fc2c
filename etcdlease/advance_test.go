package etcdlease

import (
	"testing"

	"github.com/idalloc/idalloc/internal/advancetest"
	"github.com/idalloc/idalloc/internal/etcdtest"
)

func TestAdvanceLeases(t *testing.T) {
	srv := etcdtest.Start(t)
	advancetest.Leases(t, func(tb testing.TB) advancetest.Store { return openStore(tb, srv, freshPrefix()) })
}

func TestParseLastKey(t *testing.T) {
	for _, tc := range []struct {
		rest        string
		wantCluster string
		wantID      int64
		wantOK      bool
	}{
		{"default/last/3", "default", 3, true},
		{"a%2Fb/last/0", "a/b", 0, true},
		{"default/hold/3", "", 0, false},
		{"default/layout", "", 0, false},
		{"default/last/03", "", 0, false},
		{"default/last/-1", "", 0, false},
		{"default/last/x", "", 0, false},
		{"bad%zz/last/1", "", 0, false},
	} {
		cluster, id, ok := parseLastKey(tc.rest)
		if cluster != tc.wantCluster || id != tc.wantID || ok != tc.wantOK {
			t.Errorf("parseLastKey(%q) = %q, %d, %v; want %q, %d, %v", tc.rest, cluster, id, ok, tc.wantCluster, tc.wantID, tc.wantOK)
		}
	}
}
