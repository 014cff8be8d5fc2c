package migrate

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// noonZone names a zone whose wall clock reads about noon at now: a day
// tag there is hours from its boundary while the test runs, so the
// periods advance picks by the real clock are the ones the test expects.
func noonZone(now time.Time) string {
	switch off := 12 - now.UTC().Hour(); { // Etc/GMT-N is UTC+N
	case off > 0:
		return fmt.Sprintf("Etc/GMT-%d", off)
	case off < 0:
		return fmt.Sprintf("Etc/GMT+%d", -off)
	}
	return "Etc/GMT"
}

// TestAdvanceDatedCommand: on each engine, idalloc advance -by moves a
// dated tag's counters of the current and the previous period (by this
// machine's clock, as the command reads it), not its row's max_id, and a
// fresh allocator's first number of the current period is above the
// move; -dry-run prints the same moves and changes nothing.
func TestAdvanceDatedCommand(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) { testAdvanceDated(t, d) })
	}
}

func testAdvanceDated(t *testing.T, d storetest.Driver) {
	ctx := t.Context()
	db := d.NewDB(t)
	cfgPath := writeConfig(t, fmt.Sprintf(`{"driver": %q, "dsn": %q}`, db.Driver, db.DSN))
	st := db.Open(t)
	now := time.Now()
	zone := noonZone(now)
	if err := st.CreateTag(ctx, datedTag("ord", dated.Day, zone)); err != nil {
		t.Fatal(err)
	}
	f, err := dated.New(dated.Settings{Period: dated.Day, TimeZone: zone})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := f.Of(now)
	if err != nil {
		t.Fatal(err)
	}
	prev, err := f.Of(cur.Start.Add(-time.Nanosecond))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []store.PeriodCounter{{AppTag: "ord", Stamp: prev.Stamp, MaxID: 40}, {AppTag: "ord", Stamp: cur.Stamp, MaxID: 25}} {
		if err := st.(periodTarget).RaisePeriod(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		err := runAdvance(append([]string{"-config", cfgPath, "-only", "segments", "-tags", "ord"}, args...), &out, io.Discard, noEnv, sqlLeases)
		if err != nil {
			t.Fatalf("idalloc advance %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
		t.Logf("idalloc advance %s:\n%s", strings.Join(args, " "), out.String())
		return out.String()
	}
	// wantLines checks out: the periods' line, moves with suffix dry, and
	// summary.
	wantLines := func(out, dry string, moves []string, summary string) {
		t.Helper()
		got := strings.Split(strings.TrimSpace(out), "\n")
		if len(got) != len(moves)+2 || !strings.HasPrefix(got[0], "dated tags: the counters of each one's previous period") {
			t.Fatalf("output:\n%s\nwant the periods' line, %d moves and the summary", out, len(moves))
		}
		for i, l := range got[1:] {
			want := summary
			if i < len(moves) {
				want = moves[i] + dry
			}
			if l != want {
				t.Errorf("line %d = %q, want %q", i+2, l, want)
			}
		}
	}
	moves := []string{
		fmt.Sprintf("tag ord period %d: max_id 40 → 1040", prev.Stamp),
		fmt.Sprintf("tag ord period %d: max_id 25 → 1025", cur.Stamp),
	}
	summary := "advanced: 1 tag moved (2 periods of dated tags among them), 2000 IDs in all"
	before := countersOf(t, st, "ord")

	wantLines(run("-by", "1000", "-dry-run"), " (dry run)", moves, "dry run, nothing written; would have "+summary)
	if got := countersOf(t, st, "ord"); !slices.Equal(got, before) {
		t.Errorf("after a dry run, counters %+v, want them as they were, %+v", got, before)
	}

	wantLines(run("-by", "1000"), "", moves, summary)
	want := []store.PeriodCounter{{AppTag: "ord", Stamp: prev.Stamp, MaxID: 1040}, {AppTag: "ord", Stamp: cur.Stamp, MaxID: 1025}}
	if got := countersOf(t, st, "ord"); !slices.Equal(got, want) {
		t.Errorf("after advance -by 1000, counters %+v, want %+v", got, want)
	}
	tags := tagsOf(t, st)
	if i := slices.IndexFunc(tags, func(g segment.Tag) bool { return g.AppTag == "ord" }); tags[i].MaxID != 0 {
		t.Errorf("ord's row max_id moved to %d: a dated row's counts nothing", tags[i].MaxID)
	}
	// An allocator whose clock is frozen at a reading of this one (so
	// bounded by a minute, not a second): its first number of the
	// current period is the one after the move.
	if got, want := firstID(t, st, "ord", time.Now(), time.Minute), fmt.Sprintf("%d%06d", cur.Stamp, 1026); got != want {
		t.Errorf("first ID after the advance %s, want %s", got, want)
	}
}
