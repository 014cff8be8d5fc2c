package resp

import (
	"context"
	"strconv"
	"testing"

	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestBadInputSameWordsAsHTTP sends frontendtest's bad inputs, the ones
// every front end shares, over RESP on the real domain and each store
// driver. For each: the domain called directly gives the case's Kind and
// message; RESP answers exactly that message after the class the contract
// gives that Kind, on every command that makes the call; and at the end the
// store holds what it held before. Package server's test sends the same
// cases over HTTP and expects the same message as its msg. RESP has no
// lease calls and no decomposition: those cases are skipped.
func TestBadInputSameWordsAsHTTP(t *testing.T) {
	classByKind := map[string]string{ // docs/api.md §6, written out
		"bad_request":  "ERR",
		"unknown_tag":  "ERR",
		"exists":       "ERR",
		"not_assigned": "ERR",
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			st, dom, rdb := adminClient(t, d)

			for _, c := range frontendtest.Cases() {
				cmds := respCommands(c)
				if cmds == nil {
					continue
				}
				t.Run(c.Name, func(t *testing.T) {
					kind, msg, ok := frontendtest.Describe(c.Call(ctx, dom))
					if !ok || kind != c.WantKind || msg != c.WantMsg {
						t.Fatalf("domain answers %q %q (a domain error: %v), want %q %q", kind, msg, ok, c.WantKind, c.WantMsg)
					}
					class, known := classByKind[c.WantKind]
					if !known {
						t.Fatalf("no RESP class known for kind %q", c.WantKind)
					}
					want := class + " " + c.WantMsg
					for _, cmd := range cmds {
						err := rdb.Do(ctx, cmd...).Err()
						if err == nil || err.Error() != want {
							t.Errorf("%q: got %v, want %q", cmd, err, want)
						}
					}
				})
			}
			frontendtest.CheckUnchanged(t, st)
		})
	}
}

// respCommands are the RESP commands that make c's domain call; nil when
// RESP has none.
func respCommands(c frontendtest.Case) [][]any {
	switch c.Op {
	case frontendtest.Alloc:
		if c.Count != 0 {
			return [][]any{{"IDS", c.Tag, c.Count}}
		}
		return [][]any{{"GET", c.Tag}, {"INCR", c.Tag}, {"MGET", c.Tag}, {"MGET", frontendtest.ExistingTag, c.Tag}}
	case frontendtest.Buffered:
		return [][]any{{"INFO", c.Tag}}
	case frontendtest.CreateTag:
		cmd := []any{"HSET", c.Tag, "step", c.Step}
		if c.Start != 0 {
			cmd = append(cmd, "start", c.Start)
		}
		if c.Description != "" {
			cmd = append(cmd, "description", c.Description)
		}
		if c.Format != "" {
			cmd = append(cmd, "format", c.Format)
		}
		if c.Length != 0 {
			cmd = append(cmd, "length", strconv.Itoa(c.Length))
		}
		return [][]any{cmd}
	}
	return nil
}
