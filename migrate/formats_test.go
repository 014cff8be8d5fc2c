package migrate

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// A fixed_length and a scrambled tag move with their format, length and
// key: the target's next IDs are the ones the source would have issued
// next. A tag the target has in another format is refused, not raised.
func TestMigrateCarriesFormats(t *testing.T) {
	for _, target := range storetest.Drivers() {
		t.Run(target.Name, func(t *testing.T) {
			ctx := context.Background()
			fromDB := storetest.SQLite().NewDB(t)
			from := fromDB.Open(t)
			a, err := segment.New(ctx, from, segment.Config{})
			if err != nil {
				t.Fatal(err)
			}
			for _, tg := range []segment.NewTag{
				{AppTag: "fixed", Step: 10, Start: new(int64(5000)), Format: segment.FormatFixedLength, Length: 4},
				{AppTag: "scr", Step: 10, Format: segment.FormatScrambled, Length: 8},
				{AppTag: "clash", Step: 10, Format: segment.FormatScrambled, Length: 8},
			} {
				if _, err := a.CreateTag(ctx, tg); err != nil {
					t.Fatal(err)
				}
				for range 15 {
					if _, err := a.Next(ctx, tg.AppTag); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}

			toDB := target.NewDB(t)
			to := toDB.Open(t)
			if err := to.CreateTag(ctx, segment.Tag{AppTag: "clash", Step: 10}); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			_, err = migrateTags(ctx, from, to, nil, func(s string) { out.WriteString(s + "\n") })
			if !errors.As(err, new(refusedTagsError)) {
				t.Fatalf("migrateTags = %v, want the clash refused", err)
			}
			if want := `"clash": NOT MIGRATED: the target has it as sequential, the source as scrambled of length 8`; !strings.Contains(out.String(), want) {
				t.Errorf("report %q does not say %q", out.String(), want)
			}

			next := func(st store.Store, tag string) []int64 {
				t.Helper()
				b, err := segment.New(ctx, st, segment.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close(ctx)
				ids := make([]int64, 5)
				if err := b.NextN(ctx, tag, ids); err != nil {
					t.Fatal(err)
				}
				return ids
			}
			for _, tag := range []string{"fixed", "scr"} {
				// The source gave its unused IDs back at Close, so both
				// continue from the same sequence number.
				got, want := next(toDB.Open(t), tag), next(fromDB.Open(t), tag)
				if !slices.Equal(got, want) {
					t.Errorf("%s: next IDs on the target %v, want the source's %v", tag, got, want)
				}
				if tag == "fixed" && got[0] != 5015 {
					t.Errorf("fixed: next ID on the target %d, want 5015", got[0])
				}
			}
		})
	}
}
