package storetest

import (
	"cmp"
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// seeded is the row schema.sql seeds.
const seeded = "test_business"

func segmentCases() []testCase {
	return []testCase{
		{"fetch/first fetch of the seeded row is (0, step]", testFirstFetch},
		{"fetch/consecutive fetches are contiguous", testContiguousFetches},
		{"fetch/explicit step overrides the row's step", testExplicitStep},
		{"fetch/unknown tag", testFetchUnknown},
		{"fetch/stops at the limit, then is exhausted and changes nothing", testFetchLimit},
		{"fetch/handles racing at the limit share it exactly", testConcurrentFetchesAtLimit},
		{"fetch/a new handle continues above the last fetch", testFetchNewHandle},
		{"fetch/handles fetching concurrently never overlap", testConcurrentFetches},
		{"create/first ID is start", testCreateStart},
		{"create/duplicate tag", testCreateDuplicate},
		{"create/tags are case-sensitive", testCreateCaseSensitive},
		{"create/invalid input", testCreateInvalid},
		{"give back/succeeds only while max_id is unchanged", testGiveBack},
		{"tags/lists every row in app_tag order", testTags},
		{"ping", testPing},
	}
}

// mustFetch fetches, with no limit a test reaches, or fails t.
func mustFetch(t *testing.T, st store.Store, tag string, step int64) segment.Fetched {
	t.Helper()
	f, err := st.Fetch(t.Context(), tag, segment.MaxUsableID, step)
	if err != nil {
		t.Fatalf("Fetch(%q, %d): %v", tag, step, err)
	}
	return f
}

func mustCreate(t *testing.T, st store.Store, tag segment.Tag) {
	t.Helper()
	if err := st.CreateTag(t.Context(), tag); err != nil {
		t.Fatalf("CreateTag(%+v): %v", tag, err)
	}
}

// maxID reads the tag's max_id through Tags.
func maxID(t *testing.T, st store.Store, tag string) int64 {
	t.Helper()
	tags, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	for _, tg := range tags {
		if tg.AppTag == tag {
			return tg.MaxID
		}
	}
	t.Fatalf("Tags: no row %q", tag)
	return 0
}

func testFirstFetch(t *testing.T, db DB) {
	got := mustFetch(t, db.Open(t), seeded, 0)
	want := segment.Fetched{MaxID: 100000, Size: 100000, Step: 100000}
	if got != want {
		t.Errorf("Fetch(%q, 0) = %+v, want %+v", seeded, got, want)
	}
}

func testContiguousFetches(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 10})
	var prev int64
	for i := range 5 {
		f := mustFetch(t, st, "orders", 0)
		if got, want := f.MaxID-f.Size, prev; got != want {
			t.Errorf("fetch %d starts after %d, want after %d", i, got, want)
		}
		prev = f.MaxID
	}
	if got, want := maxID(t, st, "orders"), int64(50); got != want {
		t.Errorf("max_id = %d, want %d", got, want)
	}
}

func testExplicitStep(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 10})
	for _, tc := range []struct {
		step int64
		want segment.Fetched
	}{
		{step: 25, want: segment.Fetched{MaxID: 25, Size: 25, Step: 10}},
		{step: 0, want: segment.Fetched{MaxID: 35, Size: 10, Step: 10}},
		{step: -1, want: segment.Fetched{MaxID: 45, Size: 10, Step: 10}},
		{step: 1, want: segment.Fetched{MaxID: 46, Size: 1, Step: 10}},
	} {
		if got := mustFetch(t, st, "orders", tc.step); got != tc.want {
			t.Errorf("Fetch(step %d) = %+v, want %+v", tc.step, got, tc.want)
		}
	}
}

func testFetchUnknown(t *testing.T, db DB) {
	_, err := db.Open(t).Fetch(t.Context(), "no_such_tag", segment.MaxUsableID, 0)
	if !errors.Is(err, segment.ErrUnknownTag) {
		t.Errorf("Fetch(unknown) error = %v, want %v", err, segment.ErrUnknownTag)
	}
}

// testFetchLimit: a fetch moves max_id to min(max_id+delta, limit), so a
// step larger than what is left reserves the rest, and a fetch at the
// limit is refused without a write; up to math.MaxInt64 without
// overflowing.
func testFetchLimit(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "two_digits", Step: 10, Start: 10}) // max_id 9; IDs 10..99
	for _, tc := range []struct {
		name        string
		limit, step int64
		want        segment.Fetched
		wantErr     error
		wantMaxID   int64
	}{
		{"a step within the limit", 99, 80, segment.Fetched{MaxID: 89, Size: 80, Step: 10}, nil, 89},
		{"a step past the limit stops there", 99, 100, segment.Fetched{MaxID: 99, Size: 10, Step: 10}, nil, 99},
		{"at the limit: exhausted, nothing written", 99, 1, segment.Fetched{}, segment.ErrExhausted, 99},
		{"past the limit (a lower one): exhausted, nothing written", 50, 0, segment.Fetched{}, segment.ErrExhausted, 99},
		{"a higher limit serves again", 999, 0, segment.Fetched{MaxID: 109, Size: 10, Step: 10}, nil, 109},
	} {
		f, err := st.Fetch(t.Context(), "two_digits", tc.limit, tc.step)
		if f != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
			t.Errorf("%s: Fetch(limit %d, step %d) = %+v, %v; want %+v, %v", tc.name, tc.limit, tc.step, f, err, tc.want, tc.wantErr)
		}
		if got := maxID(t, st, "two_digits"); got != tc.wantMaxID {
			t.Errorf("%s: max_id = %d, want %d", tc.name, got, tc.wantMaxID)
		}
	}

	// max_id = MaxInt64 - 6: room for exactly 6 more IDs below int64's end.
	mustCreate(t, st, segment.Tag{AppTag: "nearly_full", Step: 10, Start: math.MaxInt64 - 5})
	if got, want := mustFetchTo(t, st, "nearly_full", math.MaxInt64, 10), (segment.Fetched{MaxID: math.MaxInt64, Size: 6, Step: 10}); got != want {
		t.Errorf("Fetch(limit MaxInt64, step 10) = %+v, want %+v", got, want)
	}
	if _, err := st.Fetch(t.Context(), "nearly_full", math.MaxInt64, 1); !errors.Is(err, segment.ErrExhausted) {
		t.Errorf("Fetch at MaxInt64 error = %v, want %v", err, segment.ErrExhausted)
	}
	if got, want := maxID(t, st, "nearly_full"), int64(math.MaxInt64); got != want {
		t.Errorf("max_id after the refused fetch = %d, want %d", got, want)
	}
}

// mustFetchTo fetches up to limit or fails t.
func mustFetchTo(t *testing.T, st store.Store, tag string, limit, step int64) segment.Fetched {
	t.Helper()
	f, err := st.Fetch(t.Context(), tag, limit, step)
	if err != nil {
		t.Fatalf("Fetch(%q, limit %d, step %d): %v", tag, limit, step, err)
	}
	return f
}

// testConcurrentFetchesAtLimit: three handles fetching a row with room
// for 95 numbers, in steps of 7 up to a limit, together receive exactly
// the numbers up to it, each once, then are all refused: the last range
// is cut short, and no fetch moves max_id past the limit.
func testConcurrentFetchesAtLimit(t *testing.T, db DB) {
	const handles, step, limit = 3, 7, 99
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	mustCreate(t, db.Open(t), segment.Tag{AppTag: "bounded", Step: step, Start: 5}) // max_id 4
	var mu sync.Mutex
	var got []segment.Fetched
	errs := make(chan error, handles)
	var wg sync.WaitGroup
	for range handles {
		st := db.Open(t)
		wg.Go(func() {
			for {
				f, err := st.Fetch(ctx, "bounded", limit, 0)
				if errors.Is(err, segment.ErrExhausted) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				got = append(got, f)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Fetch: %v", err)
	}
	slices.SortFunc(got, func(a, b segment.Fetched) int { return cmp.Compare(a.MaxID, b.MaxID) })
	prev := int64(4)
	for _, f := range got {
		if f.MaxID-f.Size != prev || f.Size < 1 || f.Size > step {
			t.Fatalf("range (%d, %d] follows %d: want (%d, %d] or shorter at the limit", f.MaxID-f.Size, f.MaxID, prev, prev, prev+step)
		}
		prev = f.MaxID
	}
	if prev != limit {
		t.Errorf("the ranges end at %d, want the limit %d", prev, limit)
	}
	if got := maxID(t, db.Open(t), "bounded"); got != limit {
		t.Errorf("max_id = %d, want %d", got, limit)
	}
}

func testFetchNewHandle(t *testing.T, db DB) {
	first := db.Open(t)
	f := mustFetch(t, first, seeded, 10)
	if err := first.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, want := mustFetch(t, db.Open(t), seeded, 10).MaxID-10, f.MaxID; got != want {
		t.Errorf("new handle's fetch starts after %d, want after %d", got, want)
	}
}

// testConcurrentFetches runs three handles, each with its own connections,
// fetching one tag at once.
func testConcurrentFetches(t *testing.T, db DB) {
	const handles, fetches, step = 3, 40, 7
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	mustCreate(t, db.Open(t), segment.Tag{AppTag: "shared", Step: step})

	type span struct{ lo, hi int64 } // (lo, hi]
	spans := make(chan span, handles*fetches)
	errs := make(chan error, handles*fetches)
	var wg sync.WaitGroup
	for range handles {
		st := db.Open(t)
		wg.Go(func() {
			for range fetches {
				f, err := st.Fetch(ctx, "shared", segment.MaxUsableID, 0)
				if err != nil {
					errs <- err
					return
				}
				spans <- span{f.MaxID - f.Size, f.MaxID}
			}
		})
	}
	wg.Wait()
	close(spans)
	close(errs)
	for err := range errs {
		t.Errorf("Fetch: %v", err)
	}
	var got []span
	for s := range spans {
		got = append(got, s)
	}
	slices.SortFunc(got, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	if len(got) != handles*fetches {
		t.Fatalf("got %d ranges, want %d", len(got), handles*fetches)
	}
	var prev int64
	for _, s := range got {
		if s.lo != prev || s.hi-s.lo != step {
			t.Fatalf("range (%d, %d] follows %d: want (%d, %d]", s.lo, s.hi, prev, prev, prev+step)
		}
		prev = s.hi
	}
}

func testCreateStart(t *testing.T, db DB) {
	st := db.Open(t)
	for _, tc := range []struct {
		tag       segment.Tag
		wantFirst int64
	}{
		{segment.Tag{AppTag: "default_start", Step: 5}, 1},
		{segment.Tag{AppTag: "start_1000", Step: 5, Start: 1000}, 1000},
		{segment.Tag{AppTag: "start_1", Step: 5, Start: 1}, 1},
	} {
		mustCreate(t, st, tc.tag)
		f := mustFetch(t, st, tc.tag.AppTag, 0)
		if got := f.MaxID - f.Size + 1; got != tc.wantFirst {
			t.Errorf("%s: first ID = %d, want %d", tc.tag.AppTag, got, tc.wantFirst)
		}
	}
}

func testCreateDuplicate(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 5})
	mustFetch(t, st, "orders", 0)
	for _, tag := range []string{"orders", seeded} {
		err := st.CreateTag(t.Context(), segment.Tag{AppTag: tag, Step: 7})
		if !errors.Is(err, segment.ErrTagExists) {
			t.Errorf("CreateTag(%q) again: error = %v, want %v", tag, err, segment.ErrTagExists)
		}
	}
	if got, want := maxID(t, st, "orders"), int64(5); got != want {
		t.Errorf("max_id after duplicate create = %d, want %d", got, want)
	}
}

func testCreateCaseSensitive(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "Orders", Step: 5})
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 7})
	if _, err := st.Fetch(t.Context(), "ORDERS", segment.MaxUsableID, 0); !errors.Is(err, segment.ErrUnknownTag) {
		t.Errorf("Fetch(ORDERS) error = %v, want %v", err, segment.ErrUnknownTag)
	}
	if got, want := mustFetch(t, st, "orders", 0).Step, int64(7); got != want {
		t.Errorf("Fetch(orders).Step = %d, want %d", got, want)
	}
}

func testCreateInvalid(t *testing.T, db DB) {
	st := db.Open(t)
	for _, tc := range []struct {
		name string
		tag  segment.Tag
		want error // nil: any error
	}{
		{"zero step", segment.Tag{AppTag: "a", Step: 0}, segment.ErrInvalidStep},
		{"negative start", segment.Tag{AppTag: "a", Step: 1, Start: -1}, segment.ErrInvalidStep},
		{"bad tag", segment.Tag{AppTag: "a b", Step: 1}, segment.ErrInvalidTag},
		{"long tag", segment.Tag{AppTag: strings.Repeat("a", 65), Step: 1}, segment.ErrInvalidTag},
		{"long description", segment.Tag{AppTag: "a", Step: 1, Description: strings.Repeat("d", 257)}, nil},
	} {
		err := st.CreateTag(t.Context(), tc.tag)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: CreateTag error = %v, want %v", tc.name, err, tc.want)
		}
	}
	tags, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	if len(tags) != 1 {
		t.Errorf("Tags = %+v, want only %s", tags, seeded)
	}
}

func testGiveBack(t *testing.T, db DB) {
	st := db.Open(t)
	mustCreate(t, st, segment.Tag{AppTag: "orders", Step: 100})
	f := mustFetch(t, st, "orders", 0) // (0, 100]
	ok, err := st.GiveBack(t.Context(), "orders", f.MaxID-1, 40)
	if err != nil || ok {
		t.Errorf("GiveBack(stale max) = %v, %v; want false, nil", ok, err)
	}
	ok, err = st.GiveBack(t.Context(), "orders", f.MaxID, 40)
	if err != nil || !ok {
		t.Fatalf("GiveBack(current max) = %v, %v; want true, nil", ok, err)
	}
	if got, want := mustFetch(t, st, "orders", 0).MaxID, int64(140); got != want {
		t.Errorf("fetch after give-back: MaxID = %d, want %d", got, want)
	}
	ok, err = st.GiveBack(t.Context(), "orders", f.MaxID, 40) // the row moved on
	if err != nil || ok {
		t.Errorf("GiveBack after another fetch = %v, %v; want false, nil", ok, err)
	}
	ok, err = st.GiveBack(t.Context(), "no_such_tag", 0, 0)
	if err != nil || ok {
		t.Errorf("GiveBack(unknown tag) = %v, %v; want false, nil", ok, err)
	}
}

func testTags(t *testing.T, db DB) {
	st := db.Open(t)
	before := time.Now().Add(-time.Hour)
	mustCreate(t, st, segment.Tag{AppTag: "b.orders", Step: 20, Start: 11, Description: "B orders"})
	mustCreate(t, st, segment.Tag{AppTag: "A:users", Step: 30})
	mustFetch(t, st, "b.orders", 0)

	got, err := st.Tags(t.Context())
	if err != nil {
		t.Fatalf("Tags: %v", err)
	}
	want := []segment.Tag{
		{AppTag: "A:users", MaxID: 0, Step: 30, Start: 1, Format: segment.FormatSequential},
		{AppTag: "b.orders", MaxID: 30, Step: 20, Start: 11, Description: "B orders", Format: segment.FormatSequential},
		{AppTag: seeded, MaxID: 0, Step: 100000, Start: 1, Description: seeded, Format: segment.FormatSequential},
	}
	if len(got) != len(want) {
		t.Fatalf("Tags = %+v, want %+v", got, want)
	}
	for i := range want {
		g := got[i]
		if g.UpdateTime.Location() != time.UTC || g.UpdateTime.Before(before) {
			t.Errorf("Tags[%d].UpdateTime = %v, want a recent UTC time", i, g.UpdateTime)
		}
		g.UpdateTime = time.Time{}
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("Tags[%d] = %+v, want %+v", i, g, want[i])
		}
	}
}

func testPing(t *testing.T, db DB) {
	if err := db.Open(t).Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}
