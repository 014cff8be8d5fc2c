package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestNeverWaitsWhileBuffered freezes the only instance: every buffered ID
// is still handed out at once, and the call after the last one waits no
// longer than its context allows.
//
// It runs in a synctest bubble on an instance in process rather than on a
// SIGSTOPped binary: kill returns before the process stops, and under load
// such a server answered one more fetch (1001 IDs served with batches of
// 500). Here frozen is a state the test sets once the client is idle, so
// exactly the IDs the instance handed out and the client has not served
// are buffered; and the bubble's clock moves only while every goroutine
// waits, so "at once" is exactly zero and the deadline exactly 300ms.
func TestNeverWaitsWhileBuffered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inst := &inProcess{}
		c := newTestClient(t, Config{URLs: []string{"http://idalloc.test"}, MaxBatch: 500, RequestTimeout: 10 * time.Second,
			HTTPClient: &http.Client{Transport: inst}})
		const warm = 3000
		for range warm { // batches grow to 500
			if _, err := c.Next(t.Context(), "order"); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait() // every fetch the warm-up started has been answered
		thaw := inst.freeze()
		defer thaw()
		buffered := inst.handedOut() - warm
		if buffered < 1 || buffered > 2*500 {
			t.Fatalf("the client holds %d IDs, want 1 to two batches of 500", buffered)
		}

		served := 0
		for {
			ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
			start := time.Now()
			_, err := c.Next(ctx, "order")
			took := time.Since(start)
			cancel()
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) || took != 300*time.Millisecond {
					t.Fatalf("after %d buffered IDs: got %v after %v, want context.DeadlineExceeded after its 300ms", served, err, took)
				}
				break
			}
			if took != 0 {
				t.Fatalf("buffered ID %d took %v; a caller must not wait on the network while its buffer holds IDs", served+1, took)
			}
			served++
			if served > buffered {
				t.Fatalf("served %d IDs from a frozen instance that had handed out %d more than the warm-up took", served, buffered)
			}
		}
		if served != buffered {
			t.Errorf("served %d of the %d buffered IDs while the instance was frozen, want all", served, buffered)
		}

		thaw()
		if _, err := c.Next(t.Context(), "order"); err != nil {
			t.Errorf("Next after the instance thawed: %v", err)
		}
	})
}

// inProcess is an idalloc instance as an http.RoundTripper: it answers
// GET /alloc?count=N with the next N IDs of its one counter, without a
// network, so that every goroutine of a request stays in a synctest
// bubble. While frozen, a request waits on a channel (durably blocked, so
// the bubble's clock can move) until thawed or its context ends.
type inProcess struct {
	mu     sync.Mutex
	last   int // the last ID handed out
	frozen chan struct{}
}

// freeze holds every request from now on, and returns the func that lets
// them through, which may be called more than once.
func (p *inProcess) freeze() (thaw func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.frozen = ch
	p.mu.Unlock()
	return sync.OnceFunc(func() {
		p.mu.Lock()
		p.frozen = nil
		p.mu.Unlock()
		close(ch)
	})
}

// handedOut is the count of IDs answered so far.
func (p *inProcess) handedOut() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

func (p *inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	p.mu.Lock()
	frozen := p.frozen
	p.mu.Unlock()
	if frozen != nil {
		select {
		case <-frozen:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	n, err := strconv.Atoi(r.URL.Query().Get("count"))
	if r.URL.Path != "/alloc" || err != nil || n < 1 {
		return nil, errors.New("inProcess answers GET /alloc?count=N only")
	}
	p.mu.Lock()
	first := p.last + 1
	p.last += n
	p.mu.Unlock()
	var b strings.Builder
	b.WriteString(`{"resp_code":0,"msg":"success","id":` + strconv.Itoa(first) + `,"ids":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(first + i))
	}
	b.WriteString("]}")
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(strings.NewReader(b.String())),
		Request:    r,
	}, nil
}
