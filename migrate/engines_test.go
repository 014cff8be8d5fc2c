package migrate

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// TestMigrateBetweenEngines runs the command, as an operator does, from
// each engine to each other (sqlite, mysql and postgres both ways; Leaf
// to each is TestMigrateFromLeaf): every tag arrives with the source's
// max_id, step, description, format, length and key; a fresh allocator on
// the target issues next what the source would have; each worker ID's last
// timestamp and the cluster's layout come along; a second run changes
// nothing.
func TestMigrateBetweenEngines(t *testing.T) {
	for _, from := range storetest.Drivers() {
		for _, to := range storetest.Drivers() {
			t.Run(from.Name+"_to_"+to.Name, func(t *testing.T) {
				testMigrateBetween(t, from, to)
			})
		}
	}
}

// migrated is the history a source is given before the move.
const (
	migratedCluster = "eu"
	migratedEpochMS = int64(1_767_225_600_000)
	migratedBits    = 10
	// migratedLastMS is a worker ID's last timestamp far past any clock
	// here, so the target's next holder can only have it from the source.
	migratedLastMS = int64(4_000_000_000_000)
)

func testMigrateBetween(t *testing.T, from, to storetest.Driver) {
	ctx := t.Context()
	srcDB := from.NewDB(t)
	workerID := fillSource(t, srcDB)
	dstDB := to.NewDB(t) // has test_business at max_id 0, none of the others
	cmd := []string{"-from-driver", srcDB.Driver, "-from-dsn", srcDB.DSN, "-to-driver", dstDB.Driver, "-to-dsn", dstDB.DSN}
	var out bytes.Buffer
	if err := runMigrate(cmd, &out, io.Discard); err != nil {
		t.Fatalf("idalloc migrate %s: %v\n%s", strings.Join(cmd, " "), err, out.String())
	}
	t.Logf("idalloc migrate:\n%s", out.String())

	src := srcDB.Open(t)
	dst := dstDB.Open(t)
	want, got := tagsOf(t, src), tagsOf(t, dst)
	if !slices.EqualFunc(got, want, sameCarried) {
		t.Fatalf("target tags\n  %+v\nwant the source's\n  %+v", got, want)
	}
	// The allocators last: the source's gives its IDs back at Close, after
	// the comparison is made.
	for _, tg := range want {
		gotIDs, wantIDs := nextIDs(t, dst, tg.AppTag), nextIDs(t, src, tg.AppTag)
		if !slices.Equal(gotIDs, wantIDs) {
			t.Errorf("%s: next IDs on the target %v, want the source's %v", tg.AppTag, gotIDs, wantIDs)
		}
		if tg.Format == segment.FormatSequential && gotIDs[0] != tg.MaxID+1 {
			t.Errorf("%s: first ID on the target %d, want the source's max_id %d + 1", tg.AppTag, gotIDs[0], tg.MaxID)
		}
	}

	history, err := dst.(historySource).LeaseTimestamps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if w := (store.LeaseTimestamp{Cluster: migratedCluster, WorkerID: workerID, LastTimestampMS: migratedLastMS}); !slices.Contains(history, w) {
		t.Errorf("target lease history %+v lacks %+v", history, w)
	}
	l, err := dst.Acquire(ctx, workerlease.AcquireRequest{Cluster: migratedCluster, MaxWorkerID: 0, Token: strings.Repeat("B", 22),
		TTL: time.Minute, NowMS: migratedLastMS + 1})
	if err != nil {
		t.Fatal(err)
	}
	if l.WorkerID != workerID || l.LastTimestampMS != migratedLastMS {
		t.Errorf("target lease got worker %d last_timestamp_ms %d, want worker %d and %d", l.WorkerID, l.LastTimestampMS, workerID, migratedLastMS)
	}
	if err := dst.CheckLayout(ctx, migratedCluster, migratedEpochMS, migratedBits-2); !errors.Is(err, snowflake.ErrLayoutMismatch) {
		t.Errorf("target CheckLayout with other worker bits = %v, want ErrLayoutMismatch: the layout came along", err)
	}

	// Again, after both sides issued three IDs of each tag and gave the
	// rest back: harmless, and the two agree still. The source's handle
	// closed first, as its instances would be.
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := runMigrate(cmd, &out, io.Discard); err != nil {
		t.Fatalf("second run: %v\n%s", err, out.String())
	}
	if got, want := tagsOf(t, dst), tagsOf(t, srcDB.Open(t)); !slices.EqualFunc(got, want, sameCarried) {
		t.Errorf("after a second run, target tags\n  %+v\nwant the source's\n  %+v", got, want)
	}
}

// fillSource gives db every kind of tag, with IDs issued from each and
// given back, and a worker ID's history with its cluster's layout; the
// lease is released, as a graceful stop leaves it. It returns the worker
// ID.
func fillSource(t *testing.T, db storetest.DB) int64 {
	t.Helper()
	ctx := t.Context()
	st := db.Open(t)
	a, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []segment.NewTag{
		{AppTag: "seq", Step: 10, Description: "orders"},
		{AppTag: "fixed", Step: 10, Start: new(int64(5000)), Format: segment.FormatFixedLength, Length: 4},
		{AppTag: "scr", Step: 7, Format: segment.FormatScrambled, Length: 8},
	} {
		if _, err := a.CreateTag(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	for _, tag := range []string{"seq", "fixed", "scr", "test_business"} {
		for range 25 {
			if _, err := a.Next(ctx, tag); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := st.Acquire(ctx, workerlease.AcquireRequest{Cluster: migratedCluster, MaxWorkerID: 3, Token: strings.Repeat("A", 22),
		Holder: "host-a:4242", TTL: time.Minute, NowMS: time.Now().UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CheckLayout(ctx, migratedCluster, migratedEpochMS, migratedBits); err != nil {
		t.Fatal(err)
	}
	if err := st.Release(ctx, l.Cluster, l.WorkerID, l.Token, migratedLastMS); err != nil {
		t.Fatal(err)
	}
	// Closed as every instance would be: a SQLite file still open here
	// would be refused as in use.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return l.WorkerID
}

// tagsOf is st's tags, by name.
func tagsOf(t *testing.T, st store.Store) []segment.Tag {
	t.Helper()
	tags, err := st.Tags(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(tags, func(a, b segment.Tag) int { return strings.Compare(a.AppTag, b.AppTag) })
	return tags
}

// sameCarried reports whether a and b agree on what migrate carries. The
// start is not carried: a tag created on the target starts above the
// source's max_id, where the source's own start may be far below it.
func sameCarried(a, b segment.Tag) bool {
	return a.AppTag == b.AppTag && a.MaxID == b.MaxID && a.Step == b.Step && a.Description == b.Description &&
		sameFormat(a, b)
}

// nextIDs is the first three IDs a fresh allocator on st issues for tag.
func nextIDs(t *testing.T, st store.Store, tag string) []int64 {
	t.Helper()
	ctx := t.Context()
	a, err := segment.New(ctx, st, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	ids := make([]int64, 3)
	if err := a.NextN(ctx, tag, ids); err != nil {
		t.Fatalf("%s: %v", tag, err)
	}
	return ids
}
