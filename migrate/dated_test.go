package migrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// farClocks is the skew bound of allocators whose injected clock is in
// 2026-11 whatever the store's reads: the bound is not what these tests
// are about (segment's are).
const farClocks = 100 * 365 * 24 * time.Hour

// shanghai is 10:00 in Asia/Shanghai (UTC+8) on day d of November 2026.
func shanghai(d int) time.Time { return time.Date(2026, 11, d, 2, 0, 0, 0, time.UTC) }

// datedTag is a dated row as a store keeps it.
func datedTag(tag string, p dated.Period, zone string) segment.Tag {
	return segment.Tag{AppTag: tag, Step: 10, Start: 1, Format: segment.FormatDated, Length: 6,
		FormatSpec: dated.Settings{Period: p, TimeZone: zone}.Spec()}
}

// allocatorAt is a fresh allocator on st whose clock reads at.
func allocatorAt(t *testing.T, st segment.Store, at time.Time, bound time.Duration) *segment.Allocator {
	t.Helper()
	a, err := segment.New(t.Context(), st, segment.Config{Now: testclock.New(at).Now, MaxClockSkew: bound})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// firstID is the first ID a fresh allocator on st issues for tag at at,
// as text; it gives the rest back.
func firstID(t *testing.T, st segment.Store, tag string, at time.Time, bound time.Duration) string {
	t.Helper()
	a := allocatorAt(t, st, at, bound)
	defer a.Close(t.Context())
	id, err := a.NextText(t.Context(), tag)
	if err != nil {
		t.Fatalf("%s at %s: %v", tag, at, err)
	}
	return id
}

// countersOf is st's period counters of tag.
func countersOf(t *testing.T, st store.Store, tag string) []store.PeriodCounter {
	t.Helper()
	all, err := st.(periodSource).Periods(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(all, func(c store.PeriodCounter) bool { return c.AppTag != tag })
}

// TestMigrateCarriesPeriods: dated tags move with their settings and
// every period's counter, from SQLite to each engine, so a fresh
// allocator on the target continues each period above what the source
// issued of it; a tag the target has with other settings is refused with
// both named, and its counters left; a second run changes nothing.
func TestMigrateCarriesPeriods(t *testing.T) {
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := t.Context()
			fromDB := storetest.SQLite().NewDB(t)
			from := fromDB.Open(t)
			clock := testclock.New(shanghai(26))
			a, err := segment.New(ctx, from, segment.Config{Now: clock.Now, MaxClockSkew: farClocks})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []segment.NewTag{
				{AppTag: "ord", Step: 10, Format: segment.FormatDated, TimeZone: "Asia/Shanghai"},
				{AppTag: "inv", Step: 10, Format: segment.FormatDated, Period: dated.Month, TimeZone: "Asia/Shanghai",
					Length: 5, Start: new(int64(100)), Prefix: "INV", Separator: "-"},
				{AppTag: "clash", Step: 10, Format: segment.FormatDated},
			} {
				if _, err := a.CreateTag(ctx, n); err != nil {
					t.Fatal(err)
				}
			}
			take := func(tag string, n int) {
				for range n {
					if _, err := a.NextText(ctx, tag); err != nil {
						t.Fatal(err)
					}
				}
			}
			take("ord", 25)
			take("clash", 5)
			clock.Set(shanghai(27)) // the next day, the same month
			take("ord", 7)
			take("inv", 3)
			// Close gives back the rest of each tag's current period; of
			// 20261126 the rest was wasted when it ended.
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			srcOrd, srcInv := countersOf(t, from, "ord"), countersOf(t, from, "inv")
			if len(srcOrd) != 2 || srcOrd[1] != (store.PeriodCounter{AppTag: "ord", Stamp: 20261127, MaxID: 7}) || len(srcInv) != 1 {
				t.Fatalf("source counters: ord %+v, inv %+v; want two days of ord, 7 issued of the second, and a month of inv", srcOrd, srcInv)
			}
			if err := from.Close(); err != nil { // as its instances would be
				t.Fatal(err)
			}

			toDB := target.NewDB(t)
			to := toDB.Open(t)
			if err := to.CreateTag(ctx, datedTag("clash", dated.Day, "Asia/Shanghai")); err != nil {
				t.Fatal(err)
			}
			cmd := []string{"-from-driver", "sqlite", "-from-dsn", fromDB.DSN, "-to-driver", toDB.Driver, "-to-dsn", toDB.DSN}
			var out bytes.Buffer
			err = runMigrate(cmd, &out, io.Discard)
			t.Logf("idalloc migrate:\n%s", out.String())
			if !errors.As(err, new(refusedTagsError)) || !errors.As(err, new(refusedPeriodsError)) {
				t.Fatalf("idalloc migrate = %v, want clash and its counter refused", err)
			}
			for _, want := range []string{
				`"clash": NOT MIGRATED: the target has it as dated of length 6 (period day, time_zone Asia/Shanghai, start 1), ` +
					`the source as dated of length 6 (period day, time_zone UTC, start 1)`,
				`tag "clash" period 20261126: NOT MIGRATED: its tag was not`,
				"inv: created, dated of length 5 (period month, time_zone Asia/Shanghai, prefix INV, separator -, start 100); its period counters follow",
				fmt.Sprintf("tag inv period 202611: created, max_id %d", srcInv[0].MaxID),
				fmt.Sprintf("tag ord period 20261126: created, max_id %d", srcOrd[0].MaxID),
				"tag ord period 20261127: created, max_id 7",
			} {
				if !strings.Contains(out.String(), want+"\n") {
					t.Errorf("output lacks %q", want)
				}
			}
			tags := tagsOf(t, to)
			src := fromDB.Open(t)
			srcTags := tagsOf(t, src)
			if err := src.Close(); err != nil { // or the next run finds the file in use
				t.Fatal(err)
			}
			for _, name := range []string{"inv", "ord"} {
				i := slices.IndexFunc(tags, func(g segment.Tag) bool { return g.AppTag == name })
				j := slices.IndexFunc(srcTags, func(g segment.Tag) bool { return g.AppTag == name })
				if i < 0 || !sameFormat(tags[i], srcTags[j]) || tags[i].Step != srcTags[j].Step {
					t.Errorf("%s on the target %+v, want the source's format, settings, start and step %+v", name, tags, srcTags[j])
				}
			}
			if got := countersOf(t, to, "ord"); !slices.Equal(got, srcOrd) {
				t.Errorf("target counters of ord %+v, want the source's %+v", got, srcOrd)
			}

			// Each period continues above the source's counter of it.
			for _, c := range []struct {
				tag  string
				at   time.Time
				want string
			}{
				{"ord", shanghai(26).Add(5 * time.Hour), fmt.Sprintf("20261126%06d", srcOrd[0].MaxID+1)},
				{"ord", shanghai(27).Add(5 * time.Hour), "20261127000008"},
				{"inv", shanghai(28), fmt.Sprintf("INV-202611-%05d", srcInv[0].MaxID+1)},
				{"ord", shanghai(28), "20261128000001"}, // a period the source never had
			} {
				if got := firstID(t, to, c.tag, c.at, farClocks); got != c.want {
					t.Errorf("%s at %s: first ID on the target %s, want %s", c.tag, c.at, got, c.want)
				}
			}

			// Again: nothing to carry, and nothing moves.
			before := countersOf(t, to, "ord")
			out.Reset()
			if err := runMigrate(cmd, &out, io.Discard); !errors.As(err, new(refusedTagsError)) {
				t.Fatalf("second run: %v\n%s", err, out.String())
			}
			for _, want := range []string{
				"ord: the target has it as dated of length 6 (period day, time_zone Asia/Shanghai, start 1) already; its period counters follow",
				fmt.Sprintf("tag ord period 20261127: target max_id %d already >= 7", before[1].MaxID),
			} {
				if !strings.Contains(out.String(), want+"\n") {
					t.Errorf("second run's output lacks %q:\n%s", want, out.String())
				}
			}
			if got := countersOf(t, to, "ord"); !slices.Equal(got, before) {
				t.Errorf("after a second run, target counters of ord %+v, want them as they were, %+v", got, before)
			}
		})
	}
}
