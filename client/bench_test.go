//go:build unix

package client

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

const benchTag = "bench"

// shared is the idalloc that the benchmarks share: SQLite, max_batch
// 100000, one tag with step 1,000,000. TestMain stops it.
var shared struct {
	once sync.Once
	srv  *server
	dir  string
	err  error
}

func benchServer(b *testing.B) *server {
	b.Helper()
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "idalloc-bench-"); shared.err != nil {
			return
		}
		cfg := serverConfig(shared.dir, map[string]any{"max_batch": MaxMaxBatch})
		var s *server
		if s, shared.err = prepareServer(shared.dir, "bench", cfg); shared.err != nil {
			return
		}
		if shared.err = s.run(); shared.err != nil {
			return
		}
		shared.srv = s
		status, v := s.post(b, "/tags", fmt.Sprintf(`{"app_tag":%q,"step":1000000}`, benchTag))
		if status != http.StatusCreated {
			shared.err = fmt.Errorf("create tag %s: HTTP %d %v", benchTag, status, v)
		}
	})
	if shared.err != nil {
		b.Fatal(shared.err)
	}
	return shared.srv
}

func stopShared() {
	if shared.srv != nil {
		shared.srv.cleanup()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

// rates keeps each benchmark's last (largest) run, for reportRatio.
var rates struct {
	mu                                         sync.Mutex
	buffered, sustained, unordered, perRequest float64
}

func reportRatio() {
	rates.mu.Lock()
	defer rates.mu.Unlock()
	if rates.unordered > 0 && rates.sustained > 0 {
		fmt.Printf("client: Unordered.Next with background refills %.0f IDs/s vs Next %.0f IDs/s: ratio %.1f\n",
			rates.unordered, rates.sustained, rates.unordered/rates.sustained)
	}
	if rates.perRequest == 0 {
		return
	}
	if rates.buffered > 0 {
		fmt.Printf("client: Next from the buffer %.0f IDs/s vs one /alloc per ID %.0f IDs/s: ratio %.0f\n",
			rates.buffered, rates.perRequest, rates.buffered/rates.perRequest)
	}
	if rates.sustained > 0 {
		fmt.Printf("client: Next with background refills %.0f IDs/s vs one /alloc per ID %.0f IDs/s: ratio %.0f\n",
			rates.sustained, rates.perRequest, rates.sustained/rates.perRequest)
	}
}

// BenchmarkNext measures Next from the buffer: parallel goroutines take
// IDs that are in the tag's buffer, as callers do between refills. Before
// the timer starts, b.N IDs are fetched from a live idalloc on loopback
// (ranges of up to 1,000,000) and queued in the tag's buffer, so the
// timed loop is Next's own path: the tag lookup, one atomic claim, the
// refill check, and a lock once per range to take the next. Every ID is
// kept (in memory allocated beforehand) and checked unique after the
// timed loop.
func BenchmarkNext(b *testing.B) {
	srv := benchServer(b)
	c, err := New(Config{URLs: []string{srv.URL}, MaxBatch: MaxMaxBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := preload(ctx, c, benchTag, b.N); err != nil {
		b.Fatal(err)
	}
	rate := benchNext(b, ctx, c, false)
	rates.mu.Lock()
	rates.buffered = rate
	rates.mu.Unlock()
}

// BenchmarkNextSustained is BenchmarkNext with the buffer refilled in the
// background as in production: ranges of up to 1,000,000 IDs (the
// defaults), fetched while the callers take IDs, from an idalloc sharing
// this machine's cores. It measures what one server feeds one tag of one
// client; with ranges, that is mostly Next's own cost.
func BenchmarkNextSustained(b *testing.B) {
	rate := benchSustained(b, false)
	rates.mu.Lock()
	rates.sustained = rate
	rates.mu.Unlock()
}

// BenchmarkUnorderedSustained is BenchmarkNextSustained with each
// goroutine taking IDs from an Unordered of its own: blocks of the tag's
// buffer, one atomic add per block instead of one per ID.
func BenchmarkUnorderedSustained(b *testing.B) {
	rate := benchSustained(b, true)
	rates.mu.Lock()
	rates.unordered = rate
	rates.mu.Unlock()
}

// benchSustained runs benchNext on a client of a fresh benchServer, its
// buffer primed by one Next, and returns the rate.
func benchSustained(b *testing.B, unordered bool) float64 {
	srv := benchServer(b)
	c, err := New(Config{URLs: []string{srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.Next(ctx, benchTag); err != nil {
		b.Fatal(err)
	}
	return benchNext(b, ctx, c, unordered)
}

// benchNext is the timed part of the Next benchmarks: b.N calls of Next in
// parallel (of an Unordered per goroutine when unordered is set), every ID
// kept, checked unique after the clock stops; it reports and returns IDs/s.
func benchNext(b *testing.B, ctx context.Context, c *Client, unordered bool) float64 {
	ids := newIDStore(b.N, 1)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := ids.writer()
		var u *Unordered
		if unordered {
			u = c.Unordered(benchTag)
		}
		for pb.Next() {
			var id int64
			var err error
			if u != nil {
				id, err = u.Next(ctx)
			} else {
				id, err = c.Next(ctx, benchTag)
			}
			if err != nil {
				ids.fail(err)
				return
			}
			w.put(id)
		}
	})
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "IDs/s")
	ids.check(b)
	return rate
}

// BenchmarkPerRequest is BenchmarkNext with one GET /alloc per ID, through
// the same Client machinery (instances, transport, answer parsing) minus
// the buffer. It runs 8 goroutines per core, so that it measures the
// server's throughput rather than one round trip's latency: the ratio it
// gives is the conservative one.
func BenchmarkPerRequest(b *testing.B) {
	const parallelism = 8
	srv := benchServer(b)
	c, err := New(Config{URLs: []string{srv.URL}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	r := request{method: http.MethodGet, path: "/alloc?app_tag=" + benchTag}
	ids := newIDStore(b.N, parallelism)
	b.ReportAllocs()
	b.SetParallelism(parallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := ids.writer()
		one := make([]int64, 0, 1)
		for pb.Next() {
			err := c.do(ctx, r, func(a answer) error {
				var err error
				one, err = appendIDs(one[:0], a.body)
				return err
			})
			if err != nil {
				ids.fail(err)
				return
			}
			w.put(one[0])
		}
	})
	b.StopTimer()
	rate := float64(b.N) / b.Elapsed().Seconds()
	b.ReportMetric(rate, "IDs/s")
	ids.check(b)
	rates.mu.Lock()
	rates.perRequest = rate
	rates.mu.Unlock()
}

// idStore keeps every ID of a benchmark without allocating in the timed
// loop: each goroutine claims chunks of a slice made beforehand, one atomic
// add per chunk.
type idStore struct {
	all     []int64
	claimed atomic.Int64
	errOnce sync.Once
	err     error
}

const chunkIDs = 4096

func newIDStore(n, parallelism int) *idStore {
	// Each goroutine leaves less than a chunk unused.
	s := &idStore{all: make([]int64, n+chunkIDs*(runtime.GOMAXPROCS(0)*parallelism+1))}
	for i := 0; i < len(s.all); i += 512 {
		s.all[i] = 0 // fault the pages in now, not in the timed loop
	}
	return s
}

type idWriter struct {
	s     *idStore
	chunk []int64
}

func (s *idStore) writer() idWriter { return idWriter{s: s} }

func (w *idWriter) put(id int64) {
	if len(w.chunk) == 0 {
		i := w.s.claimed.Add(chunkIDs) - chunkIDs
		w.chunk = w.s.all[i : i+chunkIDs]
	}
	w.chunk[0] = id
	w.chunk = w.chunk[1:]
}

func (s *idStore) fail(err error) { s.errOnce.Do(func() { s.err = err }) }

// check fails b unless b.N IDs were kept, all distinct. IDs are positive,
// so the zeros left in claimed chunks are the unused slots.
func (s *idStore) check(b *testing.B) {
	b.Helper()
	if s.err != nil {
		b.Fatalf("a call failed: %v", s.err)
	}
	got := s.all[:0]
	for _, id := range s.all {
		if id != 0 {
			got = append(got, id)
		}
	}
	if len(got) != b.N {
		b.Fatalf("kept %d IDs, want b.N = %d", len(got), b.N)
	}
	slices.Sort(got)
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			b.Fatalf("ID %d issued twice (among %d)", got[i], len(got))
		}
	}
}
