package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

// fakeIdalloc answers /alloc with IDs of its own range (from base up), as
// ranges when asked for them (as=ranges) unless lists is set (a server
// from before ranges, which ignores the parameter), or with a fault:
// fakes stand in for faults only; the live tests use the real binary.
type fakeIdalloc struct {
	*httptest.Server
	hits  atomic.Int64
	mu    sync.Mutex
	next  int64
	fault func(w http.ResponseWriter, r *http.Request) bool // true: answered with a fault; set before use
	close bool                                              // Connection: close on success
	lists bool                                              // no ranges: as=ranges is ignored
	// cut, when above 0, cuts an answer of ranges into runs of at most cut
	// IDs, one number apart, as segments of a tag shared with other
	// instances are; the numbers between (gaps) are never issued.
	cut  int64
	gaps map[int64]bool
}

func newFake(t *testing.T, base int64) *fakeIdalloc {
	f := &fakeIdalloc{next: base, gaps: map[int64]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.hits.Add(1)
		if f.fault != nil && f.fault(w, r) {
			return
		}
		n := int64(1)
		fmt.Sscanf(r.URL.Query().Get("count"), "%d", &n)
		if f.close {
			w.Header().Set("Connection", "close")
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("as") == "ranges" && !f.lists {
			fmt.Fprint(w, `{"resp_code":0,"msg":"success","ranges":[`)
			f.mu.Lock()
			for left := n; left > 0; {
				k := left
				if f.cut > 0 {
					k = min(k, f.cut)
				}
				if left < n {
					fmt.Fprint(w, ",")
					f.gaps[f.next] = true
					f.next++
				}
				fmt.Fprintf(w, "[%d,%d]", f.next, f.next+k-1)
				f.next += k
				left -= k
			}
			f.mu.Unlock()
			fmt.Fprint(w, "]}")
			return
		}
		f.mu.Lock()
		first := f.next
		f.next += n
		f.mu.Unlock()
		fmt.Fprintf(w, `{"resp_code":0,"msg":"success","id":%d,"ids":[`, first)
		for i := range n {
			if i > 0 {
				fmt.Fprint(w, ",")
			}
			fmt.Fprint(w, first+i)
		}
		fmt.Fprint(w, "]}")
	}))
	t.Cleanup(f.Close)
	return f
}

func unavailable(retryAfter string) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, _ *http.Request) bool {
		w.Header().Set("Retry-After", retryAfter)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"resp_code":3,"msg":"draining: retry on another instance"}`)
		return true
	}
}

// take calls Next n times and fails t at the first error.
func take(t *testing.T, c *Client, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for range n {
		id, err := c.Next(t.Context(), "t")
		if err != nil {
			t.Fatalf("after %d IDs: %v", len(ids), err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestUnavailableInstanceIsSetAsideForItsRetryAfter(t *testing.T) {
	bad := newFake(t, 1)
	bad.fault = unavailable("3")
	good := newFake(t, 1_000_000)
	c := newTestClient(t, Config{URLs: []string{bad.URL, good.URL}, MaxRange: 4})
	ids := take(t, c, 400) // about 100 fetches, round robin
	// Fetches that were on their way to it when it first answered may
	// reach it too: up to spanFlights run at once.
	if got := bad.hits.Load(); got < 1 || got > spanFlights {
		t.Errorf("the instance answering 503 with Retry-After: 3 got %d requests within 3s, want 1 to %d", got, spanFlights)
	}
	for _, id := range ids {
		if id < 1_000_000 {
			t.Fatalf("ID %d from the unavailable instance", id)
		}
	}
}

func TestRefusedAndClosingInstances(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close() // nothing listens: connection refused

	draining := newFake(t, 1)
	draining.close = true // answers, then closes: a draining instance
	good := newFake(t, 1_000_000)
	c := newTestClient(t, Config{URLs: []string{refused, draining.URL, good.URL}, MaxRange: 4})
	ids := take(t, c, 400)
	// The draining instance's answer is used, and it is then passed over
	// for a second: a couple of its answers, not a third of ~100 fetches.
	if got := draining.hits.Load(); got < 1 || got > 3 {
		t.Errorf("the closing instance got %d requests in well under a second, want 1 to 3", got)
	}
	checkDistinct(t, ids)
}

// TestAllInstancesDownFailsThenRecovers: every instance failing is
// ErrUnavailable for the waiting caller, and the next call after one comes
// back succeeds, though it is still set aside.
func TestAllInstancesDownFailsThenRecovers(t *testing.T) {
	a, b := newFake(t, 1), newFake(t, 1_000_000)
	var down atomic.Bool
	down.Store(true)
	fault := func(w http.ResponseWriter, r *http.Request) bool {
		if down.Load() {
			return unavailable("30")(w, r)
		}
		return false
	}
	a.fault, b.fault = fault, fault
	c := newTestClient(t, Config{URLs: []string{a.URL, b.URL}})
	if _, err := c.Next(t.Context(), "t"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("every instance 503: got %v, want ErrUnavailable", err)
	}
	down.Store(false)
	// Both are set aside for 30s; as a last resort they are tried anyway.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.Next(ctx, "t"); err != nil {
		t.Fatalf("an instance is back: got %v, want an ID", err)
	}
}

func TestContextEndsTheWait(t *testing.T) {
	hang := newFake(t, 1)
	release := make(chan struct{})
	hang.fault = func(http.ResponseWriter, *http.Request) bool { <-release; return false }
	defer close(release)
	c := newTestClient(t, Config{URLs: []string{hang.URL}, RequestTimeout: time.Minute})
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Next(ctx, "t")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 300*time.Millisecond {
		t.Errorf("returned after %v, want about the 100ms deadline", took)
	}
}

// TestCountRefusedLowersTheCap: a count above the server's max_batch (or
// max_range) lowers the cap of that kind of fetch to the server's, and
// the IDs keep coming.
func TestCountRefusedLowersTheCap(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists bool
		cap   func(*Client) int
	}{
		{"ranges", false, (*Client).rangeCap},
		{"lists, from a server without ranges", true, (*Client).batchCap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, 1)
			f.lists = tc.lists
			var maxSeen atomic.Int64
			f.fault = func(w http.ResponseWriter, r *http.Request) bool {
				var n int64
				fmt.Sscanf(r.URL.Query().Get("count"), "%d", &n)
				if n > 100 {
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprint(w, `{"resp_code":1,"msg":"invalid count: must be an integer from 1 to 100","kind":"bad_request","field":"count"}`)
					return true
				}
				for cur := maxSeen.Load(); n > cur && !maxSeen.CompareAndSwap(cur, n); cur = maxSeen.Load() {
				}
				return false
			}
			c := newTestClient(t, Config{URLs: []string{f.URL}, MaxBatch: 1000, MaxRange: 1000})
			checkDistinct(t, take(t, c, 5000))
			if got := tc.cap(c); got > 100 {
				t.Errorf("cap after refusals: got %d, want at most the server's 100", got)
			}
			if got := maxSeen.Load(); got < 50 {
				t.Errorf("largest batch served: %d, want the cap to settle near 100", got)
			}
		})
	}
}

// TestCountLeftKeepsTheCap: a count refused as more than the tag has
// left on the instance ("left", a bounded tag's end) is asked again at
// once for what is left, without lowering the client's cap: every ID up
// to the tag's last is served, then the tag is exhausted.
func TestCountLeftKeepsTheCap(t *testing.T) {
	for _, lists := range []bool{false, true} {
		t.Run(map[bool]string{false: "ranges", true: "lists"}[lists], func(t *testing.T) {
			f := newFake(t, 10)
			f.lists = lists
			f.fault = func(w http.ResponseWriter, r *http.Request) bool {
				var n int64
				fmt.Sscanf(r.URL.Query().Get("count"), "%d", &n)
				f.mu.Lock()
				left := 99 - f.next + 1
				f.mu.Unlock()
				switch {
				case left == 0:
					w.WriteHeader(http.StatusConflict)
					fmt.Fprint(w, `{"resp_code":10,"msg":"app_tag ID space exhausted","kind":"exhausted","field":"app_tag"}`)
				case n > left:
					w.WriteHeader(http.StatusBadRequest)
					fmt.Fprintf(w, `{"resp_code":1,"msg":"invalid count: must be at most %d: the IDs this tag has left on this instance, which single IDs and smaller batches still get","kind":"bad_request","field":"count","left":%d}`, left, left)
				default:
					return false
				}
				return true
			}
			c := newTestClient(t, Config{URLs: []string{f.URL}, MaxBatch: 1000, MaxRange: 1000})
			var got []int64
			for {
				id, err := c.Next(t.Context(), "t")
				if errors.Is(err, ErrExhausted) {
					break
				}
				if err != nil {
					t.Fatalf("Next after %d IDs: %v", len(got), err)
				}
				got = append(got, id)
			}
			if len(got) != 90 || got[0] != 10 || got[89] != 99 {
				t.Fatalf("IDs %v, want 10..99", got)
			}
			checkDistinct(t, got)
			if c.rangeCap() != 1000 || c.batchCap() != 1000 {
				t.Errorf("caps %d and %d after the refusals, want 1000 kept", c.rangeCap(), c.batchCap())
			}
		})
	}
	e := newError("u", 400, answerError{code: 1, kind: "bad_request", field: "count", left: 89})
	if !errors.Is(e, ErrBatchTooLarge) || e.Left != 89 {
		t.Errorf("a count refused with left 89: %v (left %d), want ErrBatchTooLarge with Left 89", e, e.Left)
	}
}

func checkDistinct(t *testing.T, ids []int64) {
	t.Helper()
	s := slices.Clone(ids)
	slices.Sort(s)
	if len(slices.Compact(s)) != len(ids) {
		t.Fatal("an ID was handed out twice")
	}
}

// defaultLayout is the server's default snowflake layout.
func defaultLayout(t *testing.T) snowflake.Layout {
	t.Helper()
	l, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
