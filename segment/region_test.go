package segment_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/alloctest"
	"github.com/idalloc/idalloc/segment"
)

// regionOf is region id of count.
func regionOf(count, id int64) segment.Region { return segment.Region{Count: count, ID: id} }

// firstOf is the first ID of a region at or above start.
func firstOf(r segment.Region, start int64) int64 {
	for n := start; ; n++ {
		if n%max(r.Count, 1) == r.ID {
			return n
		}
	}
}

// regionCases are the regions every mapping test runs in: R = 1, 2, 3, 7
// and each r.
func regionCases() []segment.Region {
	var out []segment.Region
	for _, count := range []int64{1, 2, 3, 7} {
		for id := range count {
			out = append(out, regionOf(count, id))
		}
	}
	return out
}

// TestRegionIDsAreTheResidue: in region r of R, a tag created with start S
// issues the numbers ≡ r from the first at or above S, every one of them
// in order across segments (a fetch of step IDs reserves step·R numbers),
// and Close gives the unused rest back to just below the next one, so the
// store's max_id moved by what was issued and no more.
func TestRegionIDsAreTheResidue(t *testing.T) {
	const step, n = 4, 30
	for _, r := range regionCases() {
		for _, start := range []int64{1, 9, 1000} {
			t.Run(fmt.Sprintf("%v/start %d", r, start), func(t *testing.T) {
				ctx := context.Background()
				st := newFakeStore()
				a, err := segment.New(ctx, st, segment.Config{Region: r})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "t", Step: step, Start: &start}); err != nil {
					t.Fatal(err)
				}
				ids, err := alloctest.Drain(a, "t", n)
				if err != nil {
					t.Fatal(err)
				}
				first := firstOf(r, start)
				for i, id := range ids {
					if want := first + int64(i)*max(r.Count, 1); id != want {
						t.Fatalf("id %d = %d, want %d (ids %v)", i, id, want, ids)
					}
				}
				if s := a.Stats(); len(s) != 1 || s[0].Issued != n || s[0].Buffered < 1 {
					t.Errorf("stats = %+v, want %d IDs issued and the rest of the segments buffered", s, n)
				}
				if err := a.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if got, want := st.maxID("t"), ids[n-1]+max(r.Count, 1)-1; got != want {
					t.Errorf("max_id after Close = %d, want %d: just below the region's next ID %d", got, want, want+1)
				}
				// A restart continues with the next number of the region.
				again := alloctest.New(t, st, segment.Config{Region: r})
				if id, err := again.Next(ctx, "t"); err != nil || id != ids[n-1]+max(r.Count, 1) {
					t.Errorf("after restart Next = %d, %v; want %d", id, err, ids[n-1]+max(r.Count, 1))
				}
			})
		}
	}
}

// TestRegionBatchesSpanSegments: NextN's batches, larger than what is
// buffered, hold every number of the region in order across segments.
func TestRegionBatchesSpanSegments(t *testing.T) {
	for _, r := range []segment.Region{regionOf(1, 0), regionOf(3, 2), regionOf(7, 0)} {
		t.Run(r.String(), func(t *testing.T) {
			ctx := context.Background()
			st := newFakeStore(segment.Tag{AppTag: "t", Step: 5})
			a := alloctest.New(t, st, segment.Config{Region: r})
			next := firstOf(r, 1)
			for _, size := range []int{1, 3, 17, 4, 40, 2} {
				dst := make([]int64, size)
				if err := a.NextN(ctx, "t", dst); err != nil {
					t.Fatal(err)
				}
				for _, id := range dst {
					if id != next {
						t.Fatalf("batch of %d: %v, want it to continue at %d", size, dst, next)
					}
					next += max(r.Count, 1)
				}
			}
		})
	}
}

// TestRegionFixedLengthLimits: a fixed_length tag of 2 digits issues, in
// each region, exactly its numbers from 10 to 99, the last the largest ≡ r
// below 100, and then answers exhausted.
func TestRegionFixedLengthLimits(t *testing.T) {
	for _, r := range regionCases() {
		t.Run(r.String(), func(t *testing.T) {
			ctx := context.Background()
			st := newFakeStore()
			a := alloctest.New(t, st, segment.Config{Region: r})
			if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "f", Step: 3, Format: segment.FormatFixedLength, Length: 2}); err != nil {
				t.Fatal(err)
			}
			var got []int64
			for {
				id, err := a.Next(ctx, "f")
				if errors.Is(err, segment.ErrExhausted) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, id)
			}
			var want []int64
			for n := int64(10); n <= 99; n++ {
				if n%max(r.Count, 1) == r.ID {
					want = append(want, n)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("IDs = %v, want %v", got, want)
			}
		})
	}
}

// TestRegionsNeverShareAnID: allocators of different regions, each on a
// database of its own where the same tags were created alike, under
// concurrent callers, never issue the same ID, and each issues only its
// residue.
func TestRegionsNeverShareAnID(t *testing.T) {
	for _, count := range []int64{2, 3} {
		t.Run(fmt.Sprintf("%d regions", count), func(t *testing.T) {
			ctx := context.Background()
			seen := map[int64]int64{} // ID → region
			var mu sync.Mutex
			var wg sync.WaitGroup
			errc := make(chan error, 64)
			for id := range count {
				st := newFakeStore()
				a := alloctest.New(t, st, segment.Config{Region: regionOf(count, id)})
				for _, n := range []segment.NewTag{
					{AppTag: "seq", Step: 7},
					{AppTag: "fix", Step: 5, Format: segment.FormatFixedLength, Length: 6},
				} {
					if _, err := a.CreateTag(ctx, n); err != nil {
						t.Fatal(err)
					}
				}
				for w := range 4 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						tag := []string{"seq", "fix"}[w%2]
						for range 300 {
							v, err := a.Next(ctx, tag)
							if err != nil {
								errc <- err
								return
							}
							mu.Lock()
							if other, dup := seen[v]; dup {
								errc <- fmt.Errorf("ID %d issued by regions %d and %d", v, other, id)
							}
							seen[v] = id
							mu.Unlock()
							if v%count != id {
								errc <- fmt.Errorf("region %d issued %d, ≢ %d (mod %d)", id, v, id, count)
							}
						}
					}()
				}
			}
			wg.Wait()
			close(errc)
			for err := range errc {
				t.Error(err)
			}
			if want := int(count) * 4 * 300; len(seen) != want {
				t.Errorf("%d distinct IDs, want %d", len(seen), want)
			}
		})
	}
}

// TestRegionInstancesShareTheirDatabase: three instances of region 2 of 3
// on one database, their ranges interleaved, never issue an ID twice nor
// one of another residue; after they stop (giving back what they can) a
// new instance continues above every ID they issued.
func TestRegionInstancesShareTheirDatabase(t *testing.T) {
	ctx := context.Background()
	r := regionOf(3, 2)
	st := newFakeStore(segment.Tag{AppTag: "t", Step: 7})
	var allocs []*segment.Allocator
	for range 3 {
		a, err := segment.New(ctx, st, segment.Config{Region: r})
		if err != nil {
			t.Fatal(err)
		}
		allocs = append(allocs, a)
	}
	seen := alloctest.DrainConcurrently(t, allocs, "t", 6, 400)
	var top int64
	for id := range seen {
		if id%3 != 2 {
			t.Fatalf("region 2 of 3 issued %d", id)
		}
		top = max(top, id)
	}
	for _, a := range allocs {
		if err := a.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	next := alloctest.New(t, st, segment.Config{Region: r})
	if id, err := next.Next(ctx, "t"); err != nil || id <= top || id%3 != 2 {
		t.Errorf("after the instances stopped: Next = %d, %v; want above %d and ≡ 2 (mod 3)", id, err, top)
	}
}

// TestRegionScrambledRowsShareTheirKey: a scrambled tag whose row, key and
// all, is in every region's database (copied before the regions split)
// issues length-digit IDs that no two regions share: one bijection, fed
// each region's own numbers.
func TestRegionScrambledRowsShareTheirKey(t *testing.T) {
	ctx := context.Background()
	row := segment.Tag{AppTag: "scr", Step: 50, Start: 1, Format: segment.FormatScrambled, Length: 6,
		FormatKey: []byte("0123456789abcdef0123456789abcdef")}
	seen := map[int64]bool{}
	for id := range int64(3) {
		a := alloctest.New(t, newFakeStore(row), segment.Config{Region: regionOf(3, id)})
		dst := make([]int64, 400)
		if err := a.NextN(ctx, "scr", dst); err != nil {
			t.Fatal(err)
		}
		for _, v := range dst {
			if v < 100_000 || v > 999_999 || seen[v] {
				t.Fatalf("region %d issued %d: want 6 digits, unique across regions", id, v)
			}
			seen[v] = true
		}
	}
}

// TestRegionRefusals: what one region of several does not serve is
// refused in words naming the field, and changes nothing: dated and
// scrambled tags at create, ranges (as=ranges), and a dated row already
// in its store; NextRun's run holds every Count-th number.
func TestRegionRefusals(t *testing.T) {
	ctx := context.Background()
	r := regionOf(3, 1)
	st := newPeriodStore(nil, segment.Tag{AppTag: "seq", Step: 10, Start: 1},
		segment.Tag{AppTag: "old", Step: 10, Start: 1, Format: segment.FormatDated, Length: 6, FormatSpec: datedSpec(t)})
	a := alloctest.New(t, st, segment.Config{Region: r})
	for _, n := range []segment.NewTag{
		{AppTag: "d", Format: segment.FormatDated},
		{AppTag: "s", Step: 10, Format: segment.FormatScrambled, Length: 8},
	} {
		_, err := a.CreateTag(ctx, n)
		e, ok := errs.Describe(err)
		if !ok || e.Kind != errs.BadRequest || e.Field != "format" || !strings.Contains(e.Reason, "region") ||
			!errors.Is(err, segment.ErrInvalidFormat) {
			t.Errorf("CreateTag(%s) = %v, want bad_request naming format and regions", n.Format, err)
		}
	}
	if got := len(a.Tags()); got != 2 {
		t.Errorf("%d tags after the refusals, want the 2 there before", got)
	}
	rs, err := a.NextRanges(ctx, "seq", 5, nil)
	if e, ok := errs.Describe(err); !ok || e.Field != "as" || !errors.Is(err, segment.ErrNotConsecutive) || rs != nil {
		t.Errorf("NextRanges = %v, %v; want ErrNotConsecutive naming as", rs, err)
	}
	run, err := a.NextRun(ctx, "seq", 4)
	if err != nil || run.First != 1 || run.Last != 10 {
		t.Errorf("NextRun(4) = %+v, %v; want 1, 4, 7, 10", run, err)
	}
	if id, err := a.Next(ctx, "seq"); err != nil || id != 13 {
		t.Errorf("Next after the run = %d, %v; want 13: nothing lost, nothing refused claimed", id, err)
	}
	if _, err := a.NextText(ctx, "old"); err == nil || errs.KindOf(err) == errs.BadRequest {
		t.Errorf("a dated row in a region: NextText = %v, want a fault (the row is not served)", err)
	}
}

// datedSpec is a dated tag's FormatSpec as the allocator writes it.
func datedSpec(tb testing.TB) string {
	tb.Helper()
	t, err := segment.CheckNewTag(segment.NewTag{AppTag: "x", Format: segment.FormatDated}, segment.DefaultMaxStep)
	if err != nil {
		tb.Fatal(err)
	}
	return t.FormatSpec
}

// BenchmarkNextRegion is Next in region 1 of 2: the sequential hot path
// plus the branch to issue and one multiply-add.
func BenchmarkNextRegion(b *testing.B) {
	st := newFakeStore(segment.Tag{AppTag: "bench", Step: 1_000_000})
	a := alloctest.New(b, st, segment.Config{MaxStep: 100_000_000, Region: regionOf(2, 1)})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Next(ctx, "bench"); err != nil {
			b.Fatal(err)
		}
	}
}
