package access_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/idalloc/idalloc/access"
)

// ctxStore is a memStore whose Audit notes what it saw of its context:
// its error and deadline.
type ctxStore struct {
	*memStore
	ctxErr   error
	deadline time.Time
	ok       bool
}

func (c *ctxStore) Audit(ctx context.Context, e access.Entry) error {
	c.ctxErr = ctx.Err()
	c.deadline, c.ok = ctx.Deadline()
	return c.memStore.Audit(ctx, e)
}

// TestNote: a change made elsewhere is recorded though the caller's
// context is over (its client hung up), within the audit timeout, and a
// failure to record it is logged, not returned.
func TestNote(t *testing.T) {
	tests := []struct {
		name    string
		down    bool
		wantLog map[string]string // "" when nothing is logged
		entries int
	}{
		{"recorded", false, nil, 1},
		{"store down: logged", true, map[string]string{"msg": "audit entry not written", "action": "tag.create",
			"subject": "order", "err": `audit tag.create of "order": store down`, "request_id": "r1"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &ctxStore{memStore: newMemStore()}
			st.setDown(tt.down)
			a, err := access.NewAdmin(st, validTag, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil)).With("request_id", "r1")
			a.Note(ctx, log, access.Change{Caller: "loopback 127.0.0.1:7000", Action: access.ActionTagCreate,
				Subject: "order", Detail: map[string]int{"step": 1000}})

			if st.ctxErr != nil {
				t.Errorf("the write's context: %v, want it live though the caller's is canceled", st.ctxErr)
			}
			if !st.ok || time.Until(st.deadline) > 5*time.Second {
				t.Errorf("the write's deadline: %v, %v; want one within 5 s", st.deadline, st.ok)
			}
			if len(st.log) != tt.entries {
				t.Errorf("%d audit entries, want %d", len(st.log), tt.entries)
			}
			if tt.entries == 1 && (st.log[0].Detail != `{"step":1000}` || st.log[0].Subject != "order") {
				t.Errorf("entry %+v, want subject order, detail {\"step\":1000}", st.log[0])
			}
			if tt.wantLog == nil {
				if buf.Len() != 0 {
					t.Errorf("logged %s, want nothing", buf.Bytes())
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("log %q: %v", buf.Bytes(), err)
			}
			for k, want := range tt.wantLog {
				if got[k] != want {
					t.Errorf("log's %s = %v, want %q (log %s)", k, got[k], want, buf.Bytes())
				}
			}
		})
	}
}
