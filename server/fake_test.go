package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"iter"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
)

// calls records what a fake was asked, so tests can prove bad input
// reached no dependency.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) record(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, s)
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// fakeSegments serves tags from a map with a counter; err, when set, is
// what every call returns, and panics makes Next panic.
type fakeSegments struct {
	calls
	next   atomic.Int64
	total  atomic.Int64
	err    error
	panics bool

	tagsMu sync.Mutex
	tags   map[string]segment.Tag
	// issued is a tag's IDs issued when set (setIssued); the counter
	// above otherwise. refills is its ranges received (setRefills).
	issued, refills map[string]int64
	// snapshots counts Snapshot's calls: a listing reads its page only.
	snapshots atomic.Int64
}

func newFakeSegments(tags ...string) *fakeSegments {
	f := &fakeSegments{tags: map[string]segment.Tag{}}
	for _, t := range tags {
		f.tags[t] = segment.Tag{AppTag: t, MaxID: 1000, Step: 1000,
			UpdateTime: time.Date(2026, 11, 21, 10, 0, 0, 123e6, time.UTC)}
	}
	f.total.Store(500)
	return f
}

// known answers as the allocator does: an invalid tag is refused in the
// domain's words before any lookup, an absent one is unknown.
func (f *fakeSegments) known(tag string) error {
	if !segment.ValidTag(tag) {
		return segment.ErrInvalidTag
	}
	f.tagsMu.Lock()
	defer f.tagsMu.Unlock()
	if _, ok := f.tags[tag]; !ok {
		return segment.ErrUnknownTag
	}
	return nil
}

func (f *fakeSegments) Next(ctx context.Context, tag string) (int64, error) {
	f.record("Next " + tag)
	if f.panics {
		panic("secret panic text: password=hunter2")
	}
	if f.err != nil {
		return 0, f.err
	}
	if err := f.known(tag); err != nil {
		return 0, err
	}
	return f.next.Add(1), nil
}

func (f *fakeSegments) NextN(ctx context.Context, tag string, dst []int64) error {
	f.record("NextN " + tag)
	if f.err != nil {
		return f.err
	}
	if err := f.known(tag); err != nil {
		return err
	}
	last := f.next.Add(int64(len(dst)))
	for i := range dst {
		dst[i] = last - int64(len(dst)) + 1 + int64(i)
	}
	return nil
}

// NextRanges takes n from the counter as one range; NextRun takes max.
func (f *fakeSegments) NextRanges(ctx context.Context, tag string, n int64, dst []segment.Range) ([]segment.Range, error) {
	f.record("NextRanges " + tag)
	r, err := f.run(tag, n)
	if err != nil {
		return dst, err
	}
	return append(dst, r), nil
}

func (f *fakeSegments) NextRun(ctx context.Context, tag string, max int64) (segment.Range, error) {
	f.record("NextRun " + tag)
	return f.run(tag, max)
}

// Region: the fake serves every number, as a single region does.
func (f *fakeSegments) Region() segment.Region { return segment.Region{} }

func (f *fakeSegments) run(tag string, n int64) (segment.Range, error) {
	if f.err != nil {
		return segment.Range{}, f.err
	}
	if err := f.known(tag); err != nil {
		return segment.Range{}, err
	}
	last := f.next.Add(n)
	return segment.Range{First: last - n + 1, Last: last}, nil
}

func (f *fakeSegments) Buffered(tag string) (int64, error) {
	f.record("Buffered " + tag)
	if err := f.known(tag); err != nil {
		return 0, err
	}
	return 42, nil
}

func (f *fakeSegments) TotalBuffered() int64 { return f.total.Load() }

// setIssued makes tag's IDs issued n.
func (f *fakeSegments) setIssued(tag string, n int64) {
	f.tagsMu.Lock()
	defer f.tagsMu.Unlock()
	if f.issued == nil {
		f.issued = map[string]int64{}
	}
	f.issued[tag] = n
}

// statsOf is tag's figures; tagsMu must be held.
func (f *fakeSegments) statsOf(tag string) segment.TagStats {
	n, ok := f.issued[tag]
	if !ok {
		n = f.next.Load()
	}
	return segment.TagStats{AppTag: tag, Format: segment.FormatSequential, Buffered: 42, Step: 2000, Issued: n,
		Refills: f.refills[tag]}
}

// setRefills makes tag's ranges received n.
func (f *fakeSegments) setRefills(tag string, n int64) {
	f.tagsMu.Lock()
	defer f.tagsMu.Unlock()
	if f.refills == nil {
		f.refills = map[string]int64{}
	}
	f.refills[tag] = n
}

// AllStats yields every tag's figures, from a copy: a test may change
// the fake while a loop runs.
func (f *fakeSegments) AllStats() iter.Seq[segment.TagStats] {
	f.tagsMu.Lock()
	all := make([]segment.TagStats, 0, len(f.tags))
	for t := range f.tags {
		all = append(all, f.statsOf(t))
	}
	f.tagsMu.Unlock()
	return slices.Values(all)
}

// TagPage cuts a page of the tags sorted, as the allocator does.
func (f *fakeSegments) TagPage(q segment.PageQuery) segment.Page {
	f.record("TagPage")
	f.tagsMu.Lock()
	sorted := slices.SortedFunc(maps.Values(f.tags), func(a, b segment.Tag) int { return strings.Compare(a.AppTag, b.AppTag) })
	f.tagsMu.Unlock()
	return segment.PageOf(sorted, q)
}

func (f *fakeSegments) CreateTag(ctx context.Context, nt segment.NewTag) (segment.Tag, error) {
	f.record("CreateTag " + nt.AppTag)
	if f.err != nil {
		return segment.Tag{}, f.err
	}
	t, err := segment.CheckNewTag(nt, segment.DefaultMaxStep)
	if err != nil {
		return segment.Tag{}, err
	}
	f.tagsMu.Lock()
	defer f.tagsMu.Unlock()
	if _, ok := f.tags[t.AppTag]; ok {
		return segment.Tag{}, segment.ErrTagExists
	}
	t.MaxID = t.Start - 1
	f.tags[t.AppTag] = t
	return t, nil
}

func (f *fakeSegments) UpdateTag(ctx context.Context, tag string, c segment.TagChange) (segment.Tag, error) {
	f.record("UpdateTag " + tag)
	if f.err != nil {
		return segment.Tag{}, f.err
	}
	if err := f.known(tag); err != nil {
		return segment.Tag{}, err
	}
	if err := segment.CheckTagChange(c, segment.DefaultMaxStep); err != nil {
		return segment.Tag{}, err
	}
	f.tagsMu.Lock()
	defer f.tagsMu.Unlock()
	t := f.tags[tag]
	if c.Step != nil {
		t.Step = *c.Step
	}
	if c.Description != nil {
		t.Description = *c.Description
	}
	f.tags[tag] = t
	return t, nil
}

// fakePinger answers Ping with whatever error was last set.
type fakePinger struct{ err atomic.Pointer[error] }

func (p *fakePinger) set(err error) { p.err.Store(&err) }

func (p *fakePinger) Ping(ctx context.Context) error {
	if e := p.err.Load(); e != nil {
		return *e
	}
	return nil
}

// rig is a server on fakes.
type rig struct {
	srv    *Server
	seg    *fakeSegments
	store  *fakePinger
	flake  *fakeFlake
	leases *fakeLeases
	own    *fakeOwn
	obs    *metrics.Observer
	reg    *prometheus.Registry
	logs   *syncBuffer
	// clock, once a test sets it (freeze), is what the metrics read
	// instead of the real clock.
	clock atomic.Pointer[testclock.Clock]
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newRig builds a server with every dependency faked and the tag "order";
// edit adjusts the config and deps before New.
func newRig(tb testing.TB, edit func(*Config, *Deps)) *rig {
	tb.Helper()
	r := &rig{
		seg:    newFakeSegments("order", "test_business"),
		store:  &fakePinger{},
		flake:  newFakeFlake(tb),
		leases: newFakeLeases(),
		own:    &fakeOwn{lease: newFakeLeases().lease, held: true},
		reg:    prometheus.NewRegistry(),
		logs:   &syncBuffer{},
	}
	r.obs = mustObserver(tb, r.reg)
	cfg := Config{
		AdminToken: "s3cret-admin-token",
		Observer:   r.obs,
		Metrics:    mustMetrics(tb, r.reg),
		Gatherer:   r.reg,
		Logger:     slog.New(slog.NewJSONHandler(r.logs, nil)),
	}
	deps := Deps{Segments: r.seg, Store: r.store, Snowflake: r.flake, Leases: r.leases, OwnLease: r.own}
	src := metrics.Sources{Now: r.now}
	if edit != nil {
		edit(&cfg, &deps)
	}
	watch(tb, r.obs, deps, src)
	srv, err := New(cfg, deps)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	r.srv = srv
	return r
}

// reply is a decoded answer.
type reply struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r reply) code() any { return r.body["resp_code"] }

// do sends one request through the router. body "" sends none; headers
// come in name, value pairs; the pseudo-header X-Remote-Addr sets the
// peer's address (default 192.0.2.1:1234), and Host the Host (default
// example.com).
func (rg *rig) do(tb testing.TB, method, target, body string, headers ...string) reply {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	if v := req.Header.Get("X-Remote-Addr"); v != "" {
		req.RemoteAddr = v
		req.Header.Del("X-Remote-Addr")
	}
	// net/http moves the Host header into req.Host; so does this.
	if _, ok := req.Header["Host"]; ok {
		req.Host = req.Header.Get("Host")
		req.Header.Del("Host")
	}
	w := httptest.NewRecorder()
	rg.srv.Handler().ServeHTTP(w, req)
	return decodeReply(tb, w.Code, w.Header(), w.Body.Bytes(), target)
}

func decodeReply(tb testing.TB, status int, h http.Header, raw []byte, target string) reply {
	tb.Helper()
	rep := reply{status: status, header: h, raw: string(raw)}
	if strings.HasPrefix(target, "/metrics") {
		return rep
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		tb.Errorf("%s: Content-Type = %q, want application/json", target, got)
	}
	if err := json.Unmarshal(raw, &rep.body); err != nil {
		tb.Fatalf("%s: body %q is not JSON: %v", target, raw, err)
	}
	if status == http.StatusServiceUnavailable && h.Get("Retry-After") == "" {
		tb.Errorf("%s: 503 without Retry-After", target)
	}
	return rep
}

var adminAuth = []string{"Authorization", "Bearer s3cret-admin-token"}

func mustMetrics(tb testing.TB, reg prometheus.Registerer) *Metrics {
	tb.Helper()
	m, err := NewMetrics(reg)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// mustObserver makes the domain's metrics on reg, as main does before
// the allocator, whose Observer they are.
func mustObserver(tb testing.TB, reg prometheus.Registerer) *metrics.Observer {
	tb.Helper()
	o, err := metrics.New(reg)
	if err != nil {
		tb.Fatal(err)
	}
	return o
}

// watch points o at what a server on deps serves, as main does; src
// adds the rest (Now, MaxTagSeries).
func watch(tb testing.TB, o *metrics.Observer, deps Deps, src metrics.Sources) {
	tb.Helper()
	src.Segments, src.Snowflake, src.Lease = deps.Segments, deps.Snowflake != nil, deps.OwnLease
	if err := o.Watch(src); err != nil {
		tb.Fatal(err)
	}
}

// now is the rig's clock: the real one until freeze.
func (r *rig) now() time.Time {
	if c := r.clock.Load(); c != nil {
		return c.Now()
	}
	return time.Now()
}

// freeze stops the rig's clock: the metrics sample and choose again only
// when a test ages them (ageSamples).
func (r *rig) freeze() { r.clock.Store(testclock.New(time.Now())) }
