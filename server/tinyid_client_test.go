package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// tinyidClient is Tinyid's Java client in Go, as its source behaves
// (tinyid-client: HttpSegmentIdServiceImpl, TinyIdHttpUtils; tinyid-base:
// CachedIdGenerator, SegmentId): it POSTs to nextSegmentIdSimple, takes a
// failed request or an empty body as no segment, serves currentId+delta
// … up to maxId, starts loading the next segment in the background at the
// first ID at or above loadingId, and when the current one is spent takes
// the loaded one, or fetches at once if none is there yet. One goroutine
// calls next; close waits for a load in flight.
type tinyidClient struct {
	url     string // up to bizType=, as IdGeneratorFactoryClient builds it
	bizType string
	http    *http.Client

	current, next *tinyidSegmentID
	loading       bool
	// fetches counts the segments asked for, and preloaded those served
	// after a background load had brought them.
	fetches, preloaded int
	loaded             chan *tinyidSegmentID // the background load's segment, nil for none
	wg                 sync.WaitGroup
}

// tinyidSegmentID is SegmentId: the IDs (current, max] ≡ remainder
// (mod delta).
type tinyidSegmentID struct {
	current, loading, max int64
	delta, remainder      int64
	aligned               bool
}

// SegmentId.nextId's result codes (ResultCode).
const (
	resultNormal = iota + 1
	resultLoading
	resultOver
)

// align is SegmentId.init: move current so that current+delta is the
// first number ≡ remainder above it.
func (s *tinyidSegmentID) align() {
	if s.aligned {
		return
	}
	s.aligned = true
	if s.current%s.delta == s.remainder {
		return
	}
	for range s.delta + 1 {
		s.current++
		if s.current%s.delta == s.remainder {
			s.current -= s.delta
			return
		}
	}
}

func (s *tinyidSegmentID) nextID() (int, int64) {
	s.align()
	s.current += s.delta
	switch id := s.current; {
	case id > s.max:
		return resultOver, id
	case id >= s.loading:
		return resultLoading, id
	default:
		return resultNormal, id
	}
}

func newTinyidClient(server, token, bizType string) *tinyidClient {
	return &tinyidClient{
		url:     "http://" + server + "/tinyid/id/nextSegmentIdSimple?token=" + token + "&bizType=",
		bizType: bizType,
		http:    &http.Client{},
		loaded:  make(chan *tinyidSegmentID, 1),
	}
}

// fetch is HttpSegmentIdServiceImpl.getNextSegmentId: nil for no segment.
func (c *tinyidClient) fetch() (*tinyidSegmentID, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url+c.bizType, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // HttpURLConnection's for a POST
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil // logged by the client, and no segment
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode >= 400 || strings.TrimSpace(string(body)) == "" {
		return nil, nil
	}
	f := strings.Split(strings.ReplaceAll(string(body), "\n", ""), ",")
	if len(f) < 5 {
		return nil, fmt.Errorf("segment %q: want 5 fields", body) // Java: ArrayIndexOutOfBounds
	}
	var v [5]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil {
			return nil, fmt.Errorf("segment %q: %w", body, err) // Java: NumberFormatException
		}
	}
	return &tinyidSegmentID{current: v[0], loading: v[1], max: v[2], delta: v[3], remainder: v[4]}, nil
}

// query is CachedIdGenerator.querySegmentId.
func (c *tinyidClient) query() (*tinyidSegmentID, error) {
	s, err := c.fetch()
	if err == nil && s == nil {
		err = errors.New("error query segmentId: null")
	}
	return s, err
}

// collect takes the background load's segment, if it has come.
func (c *tinyidClient) collect() {
	select {
	case s := <-c.loaded:
		c.loading = false
		if s != nil {
			c.next = s
		}
	default:
	}
}

// loadCurrent is CachedIdGenerator.loadCurrent.
func (c *tinyidClient) loadCurrent() error {
	if c.current != nil && c.current.current <= c.current.max { // useful()
		return nil
	}
	c.collect()
	if c.next != nil {
		c.current, c.next = c.next, nil
		c.preloaded++
		return nil
	}
	c.fetches++
	s, err := c.query()
	if err != nil {
		return err
	}
	c.current = s
	return nil
}

// loadNext is CachedIdGenerator.loadNext, its executor a goroutine.
func (c *tinyidClient) loadNext() {
	c.collect()
	if c.next != nil || c.loading {
		return
	}
	c.loading = true
	c.fetches++
	c.wg.Go(func() {
		s, _ := c.query() // the executor drops a failed load's exception
		c.loaded <- s
	})
}

// nextID is CachedIdGenerator.nextId.
func (c *tinyidClient) nextID() (int64, error) {
	for {
		if c.current == nil {
			if err := c.loadCurrent(); err != nil {
				return 0, err
			}
			continue
		}
		code, id := c.current.nextID()
		if code == resultOver {
			if err := c.loadCurrent(); err != nil {
				return 0, err
			}
			continue
		}
		if code == resultLoading {
			c.loadNext()
		}
		return id, nil
	}
}

func (c *tinyidClient) close() { c.wg.Wait() }

// TestTinyidClientLoop: Tinyid's client loop, two of them at once on one
// tag of a real server (a real allocator on SQLite, over HTTP) beside a
// caller of /alloc on the same tag, takes 1,000,000 IDs through
// nextSegmentIdSimple, and no ID is issued twice. max_range is below the
// tag's step (100000), so segments are parts of the allocator's, as well
// as its ends.
func TestTinyidClientLoop(t *testing.T) {
	const perClient = 500_000
	rg := newRealRig(t, func(c *Config) { c.MaxRange = 30_000 })
	ts := httptest.NewServer(rg.srv.Handler())
	t.Cleanup(ts.Close)
	host := strings.TrimPrefix(ts.URL, "http://")

	var wg sync.WaitGroup
	results := make([][]int64, 3)
	errc := make(chan error, 3)
	for i := range 2 {
		wg.Go(func() {
			c := newTinyidClient(host, "t0k", "test_business")
			defer func() {
				c.close()
				t.Logf("client %d: %d segments, %d of them loaded in the background", i, c.fetches, c.preloaded)
			}()
			ids := make([]int64, 0, perClient)
			for range perClient {
				id, err := c.nextID()
				if err != nil {
					errc <- err
					return
				}
				ids = append(ids, id)
			}
			results[i] = ids
		})
	}
	wg.Go(func() { // idalloc's own callers share the tag
		var ids []int64
		for range 50 {
			resp, err := http.Get(ts.URL + "/alloc?app_tag=test_business&count=100")
			if err != nil {
				errc <- err
				return
			}
			var got struct{ IDs []int64 }
			err = json.NewDecoder(resp.Body).Decode(&got)
			resp.Body.Close()
			if err != nil || len(got.IDs) != 100 {
				errc <- fmt.Errorf("/alloc: %v, %d IDs", err, len(got.IDs))
				return
			}
			ids = append(ids, got.IDs...)
		}
		results[2] = ids
	})
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	all := slices.Concat(results...)
	if want := 2*perClient + 5000; len(all) != want {
		t.Fatalf("got %d IDs, want %d", len(all), want)
	}
	slices.Sort(all)
	for i := 1; i < len(all); i++ {
		if all[i] == all[i-1] {
			t.Fatalf("ID %d issued twice", all[i])
		}
	}
	if all[0] < 1 {
		t.Errorf("lowest ID %d, want ≥ 1", all[0])
	}
}
