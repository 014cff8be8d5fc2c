package storetest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store"
)

func datedCases() []testCase {
	return []testCase{
		{"dated/a period's first range starts at start and the next follow on", testPeriodFirstRanges},
		{"dated/periods count apart from each other and from the tag's max_id", testPeriodsApart},
		{"dated/the last range stops at the limit, then the period is exhausted", testPeriodLimit},
		{"dated/unknown tag, and no counter made for it", testPeriodUnknownTag},
		{"dated/give back succeeds only while the counter is unchanged", testPeriodGiveBack},
		{"dated/goroutines on several handles fetching one period never overlap", testPeriodConcurrent},
		{"dated/Now and FetchPeriod read the database's clock", testPeriodNow},
		{"dated/Tags and the read-only source return a row's format_spec", testFormatSpecListed},
		{"dated/create keeps a dated tag's format and format_spec", testDatedCreate},
		{"dated/counters are listed, raised never lowered, and advanced", testPeriodCarry},
	}
}

// Stamps of three days, as segment/dated keys them; the store reads none.
const (
	day1 = 20261126
	day2 = 20261127
	day3 = 20261128
)

// noLimit is a limit no test reaches: a 6-digit sequence's last number.
const noLimit = 999_999

// periodTag creates the tag whose counters a case fetches. A sequential
// row will do: a counter reads only its tag's existence and step, and a
// dated row is segment's to allow (testDatedCreate).
func periodTag(t *testing.T, st store.Store, step int64) {
	t.Helper()
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: step})
}

// mustFetchPeriod fetches or fails t.
func mustFetchPeriod(t *testing.T, st store.Store, stamp, start, limit, step int64) segment.Fetched {
	t.Helper()
	f, err := st.FetchPeriod(t.Context(), "orders", stamp, start, limit, step)
	if err != nil {
		t.Fatalf("FetchPeriod(orders, %d, start %d, limit %d, step %d): %v", stamp, start, limit, step, err)
	}
	return f
}

// wantRange fails t unless f is the range (lo, hi] of a tag of step.
func wantRange(t *testing.T, what string, f segment.Fetched, lo, hi, step int64) {
	t.Helper()
	if f.MaxID != hi || f.Size != hi-lo || f.Step != step {
		t.Errorf("%s = max_id %d, size %d, step %d; want (%d, %d], step %d", what, f.MaxID, f.Size, f.Step, lo, hi, step)
	}
}

func testPeriodFirstRanges(t *testing.T, db DB) {
	st := db.Open(t)
	periodTag(t, st, 10)
	wantRange(t, "first fetch, start 1", mustFetchPeriod(t, st, day1, 1, noLimit, 0), 0, 10, 10)
	wantRange(t, "second fetch", mustFetchPeriod(t, st, day1, 1, noLimit, 0), 10, 20, 10)
	wantRange(t, "an explicit step", mustFetchPeriod(t, st, day1, 1, noLimit, 25), 20, 45, 10)
	// start counts only for a period's first fetch: the row holds the rest.
	wantRange(t, "a later start given", mustFetchPeriod(t, st, day1, 500, noLimit, 0), 45, 55, 10)
	wantRange(t, "first fetch, start 1000", mustFetchPeriod(t, st, day2, 1000, noLimit, 0), 999, 1009, 10)
	wantRange(t, "a new handle's fetch", mustFetchPeriod(t, db.Open(t), day1, 1, noLimit, 0), 55, 65, 10)
	if _, err := st.FetchPeriod(t.Context(), "orders", day3, 0, noLimit, 0); err == nil {
		t.Errorf("FetchPeriod with start 0: no error, want a refusal")
	}
}

func testPeriodsApart(t *testing.T, db DB) {
	st := db.Open(t)
	periodTag(t, st, 10)
	for i := range 3 {
		for _, stamp := range []int64{day1, day2} {
			lo := int64(10 * i)
			wantRange(t, "interleaved fetch", mustFetchPeriod(t, st, stamp, 1, noLimit, 0), lo, lo+10, 10)
		}
	}
	// The tag's own sequence is untouched by its periods, and theirs by it.
	if got := maxID(t, st, "orders"); got != 0 {
		t.Errorf("orders' max_id after period fetches = %d, want 0", got)
	}
	mustFetch(t, st, "orders", 0)
	wantRange(t, "a fetch after the tag's own", mustFetchPeriod(t, st, day1, 1, noLimit, 0), 30, 40, 10)
}

func testPeriodLimit(t *testing.T, db DB) {
	st := db.Open(t)
	periodTag(t, st, 10)
	wantRange(t, "first fetch", mustFetchPeriod(t, st, day1, 1, 25, 0), 0, 10, 10)
	wantRange(t, "second fetch", mustFetchPeriod(t, st, day1, 1, 25, 0), 10, 20, 10)
	wantRange(t, "the fetch that meets the limit", mustFetchPeriod(t, st, day1, 1, 25, 0), 20, 25, 10)
	for range 2 {
		if _, err := st.FetchPeriod(t.Context(), "orders", day1, 1, 25, 0); !errors.Is(err, segment.ErrExhausted) {
			t.Errorf("FetchPeriod at the limit: error = %v, want %v", err, segment.ErrExhausted)
		}
	}
	// A start past the limit leaves the period nothing to issue.
	if _, err := st.FetchPeriod(t.Context(), "orders", day2, 30, 25, 0); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("FetchPeriod with start above limit: error = %v, want %v", err, segment.ErrExhausted)
	}
	wantRange(t, "another period", mustFetchPeriod(t, st, day3, 1, 25, 0), 0, 10, 10)
	// The exhausted period's counter stayed at the limit.
	if ok, err := st.GiveBackPeriod(t.Context(), "orders", day1, 25, 25); err != nil || !ok {
		t.Errorf("GiveBackPeriod(day1, 25, 25) = %v, %v; want true: the counter is at the limit", ok, err)
	}
}

func testPeriodUnknownTag(t *testing.T, db DB) {
	st := db.Open(t)
	if _, err := st.FetchPeriod(t.Context(), "no_such_tag", day1, 1, noLimit, 0); !errors.Is(err, segment.ErrUnknownTag) {
		t.Errorf("FetchPeriod(unknown) error = %v, want %v", err, segment.ErrUnknownTag)
	}
	if ok, err := st.GiveBackPeriod(t.Context(), "no_such_tag", day1, 0, 0); err != nil || ok {
		t.Errorf("GiveBackPeriod(unknown) = %v, %v; want false, nil", ok, err)
	}
	if got := periods(t, st); len(got) != 0 {
		t.Errorf("counters after the unknown tag's fetch = %+v, want none", got)
	}
}

func testPeriodGiveBack(t *testing.T, db DB) {
	st := db.Open(t)
	periodTag(t, st, 100)
	f := mustFetchPeriod(t, st, day1, 1, noLimit, 0) // (0, 100]
	if ok, err := st.GiveBackPeriod(t.Context(), "orders", day1, f.MaxID-1, 40); err != nil || ok {
		t.Errorf("GiveBackPeriod(stale max) = %v, %v; want false, nil", ok, err)
	}
	if ok, err := st.GiveBackPeriod(t.Context(), "orders", day2, f.MaxID, 40); err != nil || ok {
		t.Errorf("GiveBackPeriod(a period without a row) = %v, %v; want false, nil", ok, err)
	}
	if ok, err := st.GiveBackPeriod(t.Context(), "orders", day1, f.MaxID, 40); err != nil || !ok {
		t.Fatalf("GiveBackPeriod(current max) = %v, %v; want true, nil", ok, err)
	}
	wantRange(t, "fetch after the give-back", mustFetchPeriod(t, st, day1, 1, noLimit, 0), 40, 140, 100)
	if ok, err := st.GiveBackPeriod(t.Context(), "orders", day1, f.MaxID, 40); err != nil || ok {
		t.Errorf("GiveBackPeriod after another fetch = %v, %v; want false, nil", ok, err)
	}
}

// testPeriodConcurrent runs goroutines on several handles, each with its
// own connections, fetching one period that has no row yet (so they race
// to make it too) until it is exhausted: the ranges must tile (0, limit]
// exactly, the last one cut at the limit.
func testPeriodConcurrent(t *testing.T, db DB) {
	const handles, perHandle, step, limit = 3, 3, 7, 1000
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	periodTag(t, db.Open(t), step)

	type span struct{ lo, hi int64 } // (lo, hi]
	spans := make(chan span, limit)
	errs := make(chan error, handles*perHandle)
	var wg sync.WaitGroup
	for range handles {
		st := db.Open(t)
		for range perHandle {
			wg.Go(func() {
				for {
					f, err := st.FetchPeriod(ctx, "orders", day1, 1, limit, 0)
					if errors.Is(err, segment.ErrExhausted) {
						return
					}
					if err != nil {
						errs <- err
						return
					}
					spans <- span{f.MaxID - f.Size, f.MaxID}
				}
			})
		}
	}
	wg.Wait()
	close(spans)
	close(errs)
	for err := range errs {
		t.Errorf("FetchPeriod: %v", err)
	}
	var got []span
	for s := range spans {
		got = append(got, s)
	}
	slices.SortFunc(got, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	var prev int64
	for _, s := range got {
		if s.lo != prev || s.hi != min(prev+step, limit) {
			t.Fatalf("range (%d, %d] follows %d: want (%d, %d]", s.lo, s.hi, prev, prev, min(prev+step, limit))
		}
		prev = s.hi
	}
	if prev != limit {
		t.Errorf("the ranges end at %d, want at the limit %d", prev, limit)
	}
}

func testPeriodNow(t *testing.T, db DB) {
	st := db.Open(t)
	periodTag(t, st, 10)
	near := func(what string, got time.Time) {
		t.Helper()
		if d := time.Since(got); got.Location() != time.UTC || d > time.Second || d < -time.Second {
			t.Errorf("%s = %v, want a UTC time within a second of this test's clock (%v)", what, got, time.Now().UTC())
		}
	}
	now, err := st.Now(t.Context())
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	near("Now", now)
	near("FetchPeriod's Now on its first fetch", mustFetchPeriod(t, st, day1, 1, noLimit, 0).Now)
	near("FetchPeriod's Now", mustFetchPeriod(t, st, day1, 1, noLimit, 0).Now)
}

// testSpec is a dated tag's settings as package segment/dated encodes
// them; the store keeps them unread.
var testSpec = dated.Settings{Period: dated.Day, TimeZone: "Asia/Shanghai", Prefix: "ORD", Separator: "-"}.Spec()

func testFormatSpecListed(t *testing.T, db DB) {
	// An operator's row: what is listed does not depend on what CreateTag
	// accepts.
	db.Exec(t, `INSERT INTO segments (app_tag, max_id, step, format, length, start, format_spec)
		VALUES ('ord', 0, 10, 'dated', 6, 1, '`+testSpec+`')`)
	st := db.Open(t)
	want := map[string]segment.Tag{
		"ord":  {Format: segment.FormatDated, Length: 6, Start: 1, FormatSpec: testSpec},
		seeded: {Format: segment.FormatSequential, Start: 1},
	}
	check := func(who string, tags []segment.Tag, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: Tags: %v", who, err)
		}
		for _, g := range tags {
			if w := want[g.AppTag]; g.Format != w.Format || g.Length != w.Length || g.Start != w.Start || g.FormatSpec != w.FormatSpec {
				t.Errorf("%s: Tags[%q] = %+v, want format %q, length %d, start %d, format_spec %q",
					who, g.AppTag, g, w.Format, w.Length, w.Start, w.FormatSpec)
			}
		}
	}
	tags, err := st.Tags(t.Context())
	check("store", tags, err)
	tags, err = db.OpenReadOnly(t).Tags(t.Context())
	check("read-only source", tags, err)

	// Whatever the tag, settings longer than the column are refused,
	// never cut short.
	long := segment.Tag{AppTag: "long", Step: 10, FormatSpec: strings.Repeat("x", 256)}
	if err := st.CreateTag(t.Context(), long); err == nil {
		t.Errorf("CreateTag with a format_spec of 256 characters: no error")
	}
	if _, ok := tagsByName(t, st)["long"]; ok {
		t.Errorf("CreateTag with a format_spec of 256 characters made a row")
	}
}

func testDatedCreate(t *testing.T, db DB) {
	tag := segment.Tag{AppTag: "ord", Step: 10, Start: 1, Format: segment.FormatDated, Length: 6, FormatSpec: testSpec}
	st := db.Open(t)
	mustCreate(t, st, tag)
	for who, h := range map[string]interface {
		Tags(context.Context) ([]segment.Tag, error)
	}{"store": st, "second handle": db.Open(t), "read-only source": db.OpenReadOnly(t)} {
		tags, err := h.Tags(t.Context())
		if err != nil {
			t.Fatalf("%s: Tags: %v", who, err)
		}
		i := slices.IndexFunc(tags, func(g segment.Tag) bool { return g.AppTag == "ord" })
		if i < 0 {
			t.Fatalf("%s: Tags = %+v, want ord among them", who, tags)
		}
		if g := tags[i]; g.Format != segment.FormatDated || g.Length != 6 || g.Start != 1 || g.FormatSpec != testSpec || g.MaxID != 0 {
			t.Errorf("%s: Tags[ord] = %+v, want dated, length 6, start 1, max_id 0, format_spec %q", who, g, testSpec)
		}
	}
}

// carrier is what idalloc migrate and advance use of a store's counters.
type carrier interface {
	Periods(ctx context.Context) ([]store.PeriodCounter, error)
	RaisePeriod(ctx context.Context, pc store.PeriodCounter) error
	AdvancePeriod(ctx context.Context, tag string, stamp, start, limit, by int64) (from, to int64, err error)
}

// counter is the counter of tag orders for stamp at maxID.
func counter(stamp, maxID int64) store.PeriodCounter {
	return store.PeriodCounter{AppTag: "orders", Stamp: stamp, MaxID: maxID}
}

// periods lists st's counters.
func periods(t *testing.T, st store.Store) []store.PeriodCounter {
	t.Helper()
	got, err := st.(carrier).Periods(t.Context())
	if err != nil {
		t.Fatalf("Periods: %v", err)
	}
	return got
}

func testPeriodCarry(t *testing.T, db DB) {
	ctx := t.Context()
	st := db.Open(t)
	c := st.(carrier)
	periodTag(t, st, 10)
	mustFetchPeriod(t, st, day1, 1, noLimit, 0)   // 10
	mustFetchPeriod(t, st, day2, 100, noLimit, 0) // 109
	want := []store.PeriodCounter{counter(day1, 10), counter(day2, 109)}
	if got := periods(t, st); !slices.Equal(got, want) {
		t.Errorf("Periods = %+v, want %+v", got, want)
	}

	for _, pc := range []store.PeriodCounter{counter(day1, 500), counter(day1, 50), counter(day3, 77)} {
		if err := c.RaisePeriod(ctx, pc); err != nil {
			t.Errorf("RaisePeriod(%+v): %v", pc, err)
		}
	}
	if err := c.RaisePeriod(ctx, store.PeriodCounter{AppTag: "nope", Stamp: day1, MaxID: 5}); !errors.Is(err, segment.ErrUnknownTag) {
		t.Errorf("RaisePeriod(unknown tag) error = %v, want %v", err, segment.ErrUnknownTag)
	}
	wantRange(t, "fetch after the raise", mustFetchPeriod(t, st, day1, 1, noLimit, 0), 500, 510, 10)

	for _, tc := range []struct {
		name                    string
		stamp, start, limit, by int64
		wantFrom, wantTo        int64
		wantErr                 error // nil: moved
	}{
		{"moves by the count", day1, 1, noLimit, 1000, 510, 1510, nil},
		{"makes a period's row at start-1 first", 20261129, 1, noLimit, 5000, 0, 5000, nil},
		{"stops at the limit", day2, 100, 200, 1000, 109, 200, nil},
		{"at the limit already", day2, 100, 200, 1000, 0, 0, segment.ErrExhausted},
		{"a count below 1", day1, 1, noLimit, 0, 0, 0, errAnyDated},
	} {
		from, to, err := c.AdvancePeriod(ctx, "orders", tc.stamp, tc.start, tc.limit, tc.by)
		switch {
		case tc.wantErr == nil && err != nil:
			t.Errorf("%s: AdvancePeriod: %v", tc.name, err)
		case tc.wantErr != nil && (err == nil || tc.wantErr != errAnyDated && !errors.Is(err, tc.wantErr)):
			t.Errorf("%s: AdvancePeriod error = %v, want %v", tc.name, err, tc.wantErr)
		case from != tc.wantFrom || to != tc.wantTo:
			t.Errorf("%s: AdvancePeriod = %d → %d, want %d → %d", tc.name, from, to, tc.wantFrom, tc.wantTo)
		}
	}
	if _, _, err := c.AdvancePeriod(ctx, "nope", day1, 1, noLimit, 10); !errors.Is(err, segment.ErrUnknownTag) {
		t.Errorf("AdvancePeriod(unknown tag) error = %v, want %v", err, segment.ErrUnknownTag)
	}

	want = []store.PeriodCounter{counter(day1, 1510), counter(day2, 200), counter(day3, 77), counter(20261129, 5000)}
	if got := periods(t, st); !slices.Equal(got, want) {
		t.Errorf("after raises and advances Periods = %+v, want %+v", got, want)
	}
	if got, err := db.OpenReadOnly(t).Periods(ctx); err != nil || !slices.Equal(got, want) {
		t.Errorf("read-only source's Periods = %+v, %v; want %+v", got, err, want)
	}
}

// errAnyDated stands for any error in a table.
var errAnyDated = errors.New("any error")
