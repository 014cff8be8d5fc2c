package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

// datedFake is an idalloc instance's /alloc for dated tags as docs/api.md §11
// shapes its answers, on the test's clock, with minute periods in UTC:
//
//	ord    text IDs "ORD-yyyyMMddHHmm-000001": id_str and ids_str only
//	num    numeric IDs yyyyMMddHHmm000001: id, id_str, ids, ids_str
//	seq    a sequential tag: id and ids
//	spent  a dated tag whose period is spent: resp_code 10, kind
//	       period_exhausted, Retry-After until the next minute
//
// With endsIn set, dated answers carry period_ends_in_ms.
type datedFake struct {
	clock    *testclock.Clock
	endsIn   bool
	requests atomic.Int64
	spent    atomic.Int64 // requests for spent

	mu       sync.Mutex
	counters map[string]int64 // by tag and stamp
}

func newDatedFake(t *testing.T, clock *testclock.Clock, endsIn bool) (*datedFake, string) {
	f := &datedFake{clock: clock, endsIn: endsIn, counters: map[string]int64{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *datedFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	tag := r.URL.Query().Get("app_tag")
	n, err := strconv.Atoi(r.URL.Query().Get("count"))
	if r.URL.Path != "/alloc" || err != nil || n < 1 {
		http.Error(w, "datedFake answers /alloc?app_tag=T&count=N only", http.StatusBadRequest)
		return
	}
	now := f.clock.Now().UTC()
	end := now.Truncate(time.Minute).Add(time.Minute)
	w.Header().Set("Content-Type", "application/json")
	if tag == "spent" {
		f.spent.Add(1)
		w.Header().Set("Retry-After", strconv.Itoa(int((end.Sub(now)+time.Second-1)/time.Second)))
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, `{"resp_code":10,"msg":"this period's numbers are all issued","kind":"period_exhausted","field":"app_tag"}`)
		return
	}
	stamp := now.Format("200601021504")
	f.mu.Lock()
	first := f.counters[tag+stamp] + 1
	f.counters[tag+stamp] += int64(n)
	f.mu.Unlock()
	var ids, strs []string
	for i := range int64(n) {
		switch tag {
		case "ord":
			strs = append(strs, fmt.Sprintf(`"ORD-%s-%06d"`, stamp, first+i))
		case "num":
			ids = append(ids, fmt.Sprintf("%s%06d", stamp, first+i))
			strs = append(strs, `"`+ids[i]+`"`)
		default:
			ids = append(ids, strconv.FormatInt(first+i, 10))
		}
	}
	b := []byte(`{"resp_code":0,"msg":"success"`)
	if len(ids) > 0 {
		b = fmt.Appendf(b, `,"id":%s`, ids[0])
	}
	if len(strs) > 0 {
		b = fmt.Appendf(b, `,"id_str":%s`, strs[0])
	}
	if len(ids) > 0 {
		b = fmt.Appendf(b, `,"ids":[%s]`, strings.Join(ids, ","))
	}
	if len(strs) > 0 {
		b = fmt.Appendf(b, `,"ids_str":[%s]`, strings.Join(strs, ","))
		if f.endsIn {
			b = fmt.Appendf(b, `,"period_ends_in_ms":%d`, end.Sub(now).Milliseconds())
		}
	}
	w.Write(append(b, '}'))
}

// datedClient is a Client of one datedFake on a clock 30s into a minute.
func datedClient(t *testing.T, endsIn bool) (*Client, *datedFake, *testclock.Clock) {
	t.Helper()
	clock := testclock.New(time.Date(2026, 11, 26, 23, 59, 30, 0, time.UTC))
	f, url := newDatedFake(t, clock, endsIn)
	return newTestClient(t, Config{URLs: []string{url}, Now: clock.Now}), f, clock
}

// TestNextText: text IDs of a dated tag, in order, from the buffer; Next
// refuses them (ErrTextOnly) without using one up; a numeric dated tag
// and a sequential one through both calls; a spent period is
// ErrPeriodExhausted with its Retry-After, for Next and NextText.
func TestNextText(t *testing.T) {
	ctx := context.Background()
	c, f, _ := datedClient(t, true)
	for i := 1; i <= 3; i++ {
		if got, err := c.NextText(ctx, "ord"); err != nil || got != fmt.Sprintf("ORD-202611262359-%06d", i) {
			t.Fatalf("NextText(ord) #%d = %q, %v", i, got, err)
		}
		if id, err := c.Next(ctx, "ord"); !errors.Is(err, ErrTextOnly) {
			t.Fatalf("Next(ord) = %d, %v; want ErrTextOnly", id, err)
		}
		dst := make([]int64, 2)
		if err := c.NextN(ctx, "ord", dst); !errors.Is(err, ErrTextOnly) {
			t.Fatalf("NextN(ord) = %v; want ErrTextOnly", err)
		}
	}
	batch := make([]string, 20) // more than the first batch of 16
	if err := c.NextTextN(ctx, "ord", batch); err != nil {
		t.Fatal(err)
	}
	for i, got := range batch {
		if want := fmt.Sprintf("ORD-202611262359-%06d", i+4); got != want {
			t.Errorf("NextTextN(ord)[%d] = %q, want %q", i, got, want)
		}
	}

	for _, tc := range []struct {
		tag  string
		want [3]int64 // Next, NextText, NextN's one
	}{
		{"num", [3]int64{202611262359_000001, 202611262359_000002, 202611262359_000003}},
		{"seq", [3]int64{1, 2, 3}},
	} {
		id, err := c.Next(ctx, tc.tag)
		text, err2 := c.NextText(ctx, tc.tag)
		one := make([]int64, 1)
		err3 := c.NextN(ctx, tc.tag, one)
		if err != nil || err2 != nil || err3 != nil || id != tc.want[0] || text != strconv.FormatInt(tc.want[1], 10) || one[0] != tc.want[2] {
			t.Errorf("%s: Next %d %v, NextText %q %v, NextN %d %v; want %d", tc.tag, id, err, text, err2, one[0], err3, tc.want)
		}
	}

	_, err := c.NextText(ctx, "spent")
	_, err2 := c.Next(ctx, "spent")
	for _, err := range []error{err, err2} {
		var e *Error
		if !errors.Is(err, ErrPeriodExhausted) || !errors.As(err, &e) || e.RetryAfter != 30*time.Second || errors.Is(err, ErrExhausted) {
			t.Errorf("spent: %v (%#v), want ErrPeriodExhausted with RetryAfter 30s", err, e)
		}
	}
	if got := f.spent.Load(); got != 2 {
		t.Errorf("two calls on a spent period made %d requests, want one each (never another instance's)", got)
	}
}

// TestDatedFreshness: a dated tag's buffered IDs are dropped when their
// period ends (period_ends_in_ms), or DatedMaxAge after they were asked
// for (without it), the batch prefetched with them too; the next call
// fetches the new period's; a sequential tag's IDs do not age.
func TestDatedFreshness(t *testing.T) {
	ctx := context.Background()
	t.Run("period_ends_in_ms", func(t *testing.T) {
		c, f, clock := datedClient(t, true)
		var got []string
		take := func() {
			t.Helper()
			id, err := c.NextText(ctx, "ord")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, id)
		}
		for range 14 { // the 14th (index 13) starts the next fetch
			take()
		}
		waitRequests(t, f, 2) // the prefetched batch, of the same minute
		clock.Add(29*time.Second + 999*time.Millisecond)
		take() // 23:59:59.999: still the minute's
		if n := f.requests.Load(); n != 2 {
			t.Errorf("%d requests within the minute, want 2: the buffer serves it", n)
		}
		clock.Add(time.Millisecond)
		take() // 00:00:00.000: a new minute, a new batch
		want := []string{}
		for i := 1; i <= 15; i++ {
			want = append(want, fmt.Sprintf("ORD-202611262359-%06d", i))
		}
		want = append(want, "ORD-202611270000-000001")
		if !slices.Equal(got, want) {
			t.Errorf("got %q, want %q", got, want)
		}
		if n := f.requests.Load(); n != 3 {
			t.Errorf("%d requests, want 3: the prefetched batch of the old minute is dropped, not used", n)
		}
	})
	t.Run("DatedMaxAge", func(t *testing.T) {
		c, f, clock := datedClient(t, false)
		for _, tag := range []string{"ord", "num"} {
			if _, err := c.NextText(ctx, tag); err != nil {
				t.Fatal(err)
			}
		}
		clock.Add(999 * time.Millisecond)
		a, err := c.NextText(ctx, "ord")
		b, err2 := c.Next(ctx, "num")
		if err != nil || err2 != nil || a != "ORD-202611262359-000002" || b != 202611262359_000002 || f.requests.Load() != 2 {
			t.Errorf("within DatedMaxAge: %q %v, %d %v after %d requests; want the second IDs from the buffer", a, err, b, err2, f.requests.Load())
		}
		clock.Add(time.Millisecond)
		a, err = c.NextText(ctx, "ord")
		b, err2 = c.Next(ctx, "num")
		if err != nil || err2 != nil || a != "ORD-202611262359-000017" || b != 202611262359_000017 || f.requests.Load() != 4 {
			t.Errorf("after DatedMaxAge: %q %v, %d %v after %d requests; want a new batch of each", a, err, b, err2, f.requests.Load())
		}
	})
	t.Run("sequential does not age", func(t *testing.T) {
		c, f, clock := datedClient(t, true)
		for i := int64(1); i <= 2; i++ {
			if id, err := c.Next(ctx, "seq"); err != nil || id != i {
				t.Fatalf("Next(seq) = %d, %v; want %d", id, err, i)
			}
			clock.Add(time.Hour)
		}
		if n := f.requests.Load(); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
	})
}

func waitRequests(t *testing.T, f *datedFake, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); f.requests.Load() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests after 10s, want %d", f.requests.Load(), n)
		}
	}
}

// TestNextTextConcurrent: text IDs taken by many goroutines at once, over
// period ends, are each handed out once.
func TestNextTextConcurrent(t *testing.T) {
	c, _, clock := datedClient(t, true)
	const workers, each = 8, 500
	var wg sync.WaitGroup
	got := make([][]string, workers)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if w == 0 && i%100 == 99 {
					clock.Add(15 * time.Second) // a minute ends every fourth time
				}
				id, err := c.NextText(context.Background(), "ord")
				if err != nil {
					errs <- err
					return
				}
				got[w] = append(got[w], id)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, ids := range got {
		if !slices.IsSorted(ids) { // one goroutine's, one instance: increasing, stamps included
			t.Errorf("a goroutine's IDs are not increasing: %q", ids)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%s handed out twice", id)
			}
			seen[id] = true
		}
	}
}
