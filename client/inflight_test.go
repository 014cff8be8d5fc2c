package client

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestFetchesInFlight runs in a synctest bubble against heldInstance, whose
// answers the test releases one by one, in any order. A fast caller gets
// two fetches at once and never more; buffered IDs are served at once
// while fetches are held; answers released in reverse order are served
// by first ID; an answer that comes after a higher one of its instance
// was served is dropped; and Close ends the fetches still held.
func TestFetchesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &heldInstance{}
		c, err := New(Config{URLs: []string{"http://idalloc.test"}, MaxRange: firstBatch, RequestTimeout: time.Hour,
			HTTPClient: &http.Client{Transport: h}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		first := make(chan int64, 1)
		go func() {
			id, _ := c.Next(ctx, "t")
			first <- id
		}()
		synctest.Wait()
		h.release(0)
		synctest.Wait()
		// The size is at its cap and the fetch came back to a waiting
		// caller: the client is fast, and fetches two answers at once.
		if got := h.flying(); got != 2 {
			t.Fatalf("%d fetches in flight after a fast caller's first answer, want 2", got)
		}
		served := []int64{<-first}
		// The later claim's answer first.
		h.release(2)
		synctest.Wait()
		h.release(1)
		synctest.Wait()
		for range 3*firstBatch - 1 {
			start := time.Now()
			id, err := c.Next(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took != 0 {
				t.Fatalf("a buffered ID took %v with fetches held", took)
			}
			served = append(served, id)
		}
		if want := seq(1, 3*firstBatch); !slices.Equal(served, want) {
			t.Fatalf("served %v, want %v: answers by first ID", served, want)
		}

		// Two fetches are held and the buffer is empty: the caller waits.
		next := make(chan []int64, 1)
		go func() {
			var ids []int64
			for range firstBatch {
				id, err := c.Next(ctx, "t")
				if err != nil {
					break
				}
				ids = append(ids, id)
			}
			next <- ids
		}()
		synctest.Wait()
		lo, hi := h.pending()
		if lo < 0 || hi < 0 {
			t.Fatalf("held fetches %d and %d, want two", lo, hi)
		}
		h.release(hi) // served as soon as it comes ...
		synctest.Wait()
		h.release(lo) // ... so this one comes too late and is dropped
		synctest.Wait()
		got := <-next
		loSpan, hiSpan := h.claim(lo), h.claim(hi)
		if want := seq(hiSpan.first, hiSpan.last); !slices.Equal(got, want) {
			t.Errorf("served %v, want the higher answer %v: the lower one is dropped", got, want)
		}
		b := (*c.tags.Load())["t"]
		b.mu.Lock()
		for _, bt := range append([]*batch{b.cur.Load()}, b.queue...) {
			if loSpan.first <= bt.first && bt.first <= loSpan.last {
				t.Errorf("the late answer %v is in the buffer, want it dropped", loSpan)
			}
		}
		b.mu.Unlock()
		if max := h.maxFlying(); max != spanFlights {
			t.Errorf("at most %d fetches in flight, want %d", max, spanFlights)
		}

		// What is still held ends with Close.
		c.Close()
		synctest.Wait()
		if g := clientGoroutines(); len(g) > 0 {
			t.Errorf("goroutines of the client outlive Close:\n%s", strings.Join(g, "\n\n"))
		}
		if id, err := c.Next(ctx, "t"); !errors.Is(err, ErrClosed) {
			t.Errorf("Next after Close: %d, %v; want ErrClosed", id, err)
		}
	})
}

// heldInstance is an idalloc instance as an http.RoundTripper that claims
// a request's IDs as it arrives and answers only when the test releases
// it (or its context ends): the test decides the order in which answers
// arrive, as scheduling on a real machine would.
type heldInstance struct {
	mu       sync.Mutex
	last     int64
	reqs     []*heldRequest
	inFlight int
	maxIn    int
}

type heldRequest struct {
	span
	released chan struct{}
	done     bool
}

func (h *heldInstance) RoundTrip(r *http.Request) (*http.Response, error) {
	n, err := strconv.ParseInt(r.URL.Query().Get("count"), 10, 64)
	if r.URL.Path != "/alloc" || r.URL.Query().Get("as") != "ranges" || err != nil || n < 1 {
		return nil, errors.New("heldInstance answers GET /alloc?as=ranges&count=N only")
	}
	h.mu.Lock()
	req := &heldRequest{span: span{h.last + 1, h.last + n}, released: make(chan struct{})}
	h.last += n
	h.reqs = append(h.reqs, req)
	h.inFlight++
	h.maxIn = max(h.maxIn, h.inFlight)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inFlight--
		req.done = true
		h.mu.Unlock()
	}()
	select {
	case <-req.released:
	case <-r.Context().Done():
		return nil, r.Context().Err()
	}
	body := fmt.Sprintf(`{"resp_code":0,"msg":"success","ranges":[[%d,%d]]}`, req.first, req.last)
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    r,
	}, nil
}

// release lets the i-th request (in order of arrival) answer.
func (h *heldInstance) release(i int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.reqs[i].released)
}

func (h *heldInstance) claim(i int) span {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.reqs[i].span
}

// pending returns the indexes of the two requests still held, the lower
// claim first; -1 for each missing.
func (h *heldInstance) pending() (lo, hi int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	lo, hi = -1, -1
	for i, r := range h.reqs {
		if r.done {
			continue
		}
		if lo < 0 {
			lo = i
		} else if hi < 0 {
			hi = i
		}
	}
	return lo, hi
}

func (h *heldInstance) flying() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inFlight
}

func (h *heldInstance) maxFlying() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.maxIn
}
