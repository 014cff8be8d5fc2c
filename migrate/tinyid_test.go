package migrate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/internal/tinyidtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// A Tinyid deployment moves to idalloc, from each engine a copy of its
// tables may be on to each target: every biz_type idalloc can take
// continues at the ID Tinyid would have issued next (its server hands out
// (max_id - step, max_id] after moving max_id, DbSegmentIdServiceImpl;
// with delta 1 and remainder 0 every one of them, SegmentId.nextId), the
// others are listed with the reason; the tokens become per-tag tokens
// with Tinyid's secrets, listed by name and tags, never their secret; the
// source is only read, and a second run is harmless.
func TestMigrateFromTinyid(t *testing.T) {
	for _, from := range tinyidtest.Engines {
		for _, to := range storetest.Drivers() {
			t.Run(from+"_to_"+to.Name, func(t *testing.T) {
				testMigrateFromTinyid(t, from, to)
			})
		}
	}
}

func testMigrateFromTinyid(t *testing.T, engine string, target storetest.Driver) {
	ctx := t.Context()
	src := tinyidtest.New(t, engine,
		`INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder, version) VALUES
			('order', 1, 5001, 1000, 1, 0, 6), ('test', 1, 1, 100000, 1, 0, 1),
			('has space', 1, 10, 10, 1, 0, 0), ('no_step', 1, 10, NULL, 1, 0, 0)`,
		`INSERT INTO tiny_id_token (token, biz_type, remark) VALUES
			('0f673adf80504e2eaa552f5d791b644c', 'test', '1'), ('0f673adf80504e2eaa552f5d791b644c', 'order', '1'),
			('s3cret-of-the-order-service', 'order', 'orders')`)
	toDB := target.NewDB(t)
	cmd := []string{"-from-driver", "tinyid", "-from-engine", engine, "-from-dsn", src.DSN, "-to-driver", toDB.Driver, "-to-dsn", toDB.DSN}
	for run := 1; run <= 2; run++ {
		var out strings.Builder
		err := runMigrate(cmd, &out, io.Discard)
		var refused refusedTagsError
		if !errors.As(err, &refused) || refused.refused != 2 || refused.total != 4 {
			t.Fatalf("run %d: migrate error = %v, want 2 of 4 tags refused\n%s", run, err, out.String())
		}
		for _, want := range []string{
			`"has space": NOT MIGRATED: name has a character outside [A-Za-z0-9_.:-]`,
			`"no_step": NOT MIGRATED: step 0 is below 1`,
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("run %d: output lacks %q:\n%s", run, want, out.String())
			}
		}
		if strings.Contains(out.String(), "0f673adf") || strings.Contains(out.String(), "s3cret") {
			t.Errorf("run %d: the output shows a token's secret:\n%s", run, out.String())
		}
		tokens := map[int]string{1: "imported (Tinyid's secret kept as the chosen token)", 2: "there already"}[run]
		for _, grant := range []string{`token tinyid-1 for ["order" "test"]: `, `token tinyid-3 for ["order"]: `} {
			if !strings.Contains(out.String(), grant+tokens) {
				t.Errorf("run %d: output lacks %q:\n%s", run, grant+tokens, out.String())
			}
		}
		if run == 1 && !strings.Contains(out.String(), "order: created, max_id 5001") {
			t.Errorf("run 1: output lacks order's creation:\n%s", out.String())
		}
		if run == 2 && !strings.Contains(out.String(), "order: target max_id 5001 already >= 5001") {
			t.Errorf("run 2: output lacks order as carried already:\n%s", out.String())
		}
	}

	to := toDB.Open(t)
	a, err := segment.New(ctx, to, segment.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close(ctx)
	for tag, want := range map[string]int64{"order": 5002, "test": 2} {
		if id, err := a.Next(ctx, tag); err != nil || id != want {
			t.Errorf("%s: first ID after the move got %d, %v; want %d, the one Tinyid would have issued next", tag, id, err, want)
		}
	}
	if names := tagNames(a.Tags()); names != "order test test_business" {
		t.Errorf("target tags %s, want order test test_business", names)
	}
	for _, tg := range a.Tags() {
		if tg.AppTag == "order" && tg.Step != 1000 {
			t.Errorf("order's step on the target %d, want Tinyid's 1000", tg.Step)
		}
	}

	// Tinyid's clients keep their secrets: each is allowed its tags.
	guard, err := access.NewGuard(ctx, to, access.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer guard.Close()
	for _, c := range []struct {
		secret, tag string
		want        error
	}{
		{"0f673adf80504e2eaa552f5d791b644c", "test", nil},
		{"0f673adf80504e2eaa552f5d791b644c", "order", nil},
		{"s3cret-of-the-order-service", "order", nil},
		{"s3cret-of-the-order-service", "test", access.ErrForbidden},
	} {
		if err := guard.Allow(c.secret, c.tag); !errors.Is(err, c.want) {
			t.Errorf("a Tinyid secret on %s after the move: %v, want %v", c.tag, err, c.want)
		}
	}

	r, err := store.OpenTinyid(ctx, engine, src.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rows, err := r.Segments(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rows, func(s store.TinyidSegment) bool { return s.BizType == "order" }); i < 0 || rows[i].MaxID != 5001 {
		t.Errorf("Tinyid's rows after the move %+v, want order's max_id 5001 as before", rows)
	}
}

// A Tinyid sequence split between databases (delta, remainder) cannot be
// honoured: every such row is named, and nothing is migrated; the target
// is not even opened, so a SQLite target file is never made.
func TestMigrateFromTinyidRefusesSplitSequences(t *testing.T) {
	for _, engine := range tinyidtest.Engines {
		t.Run(engine, func(t *testing.T) {
			src := tinyidtest.New(t, engine,
				`INSERT INTO tiny_id_info (biz_type, begin_id, max_id, step, delta, remainder) VALUES
					('order', 1, 5001, 1000, 1, 0), ('test_odd', 1, 1, 100000, 2, 1),
					('even', 1, 10, 10, 2, 0), ('shifted', 1, 10, 10, 1, 3)`)
			target := filepath.Join(t.TempDir(), "idalloc.db")
			var out strings.Builder
			err := runMigrate([]string{"-from-driver", "tinyid", "-from-engine", engine, "-from-dsn", src.DSN,
				"-to-driver", "sqlite", "-to-dsn", target}, &out, io.Discard)
			var refused tinyidRefusedError
			if !errors.As(err, &refused) || refused.refused != 3 || refused.total != 4 {
				t.Fatalf("migrate error = %v, want 3 of 4 rows refused\n%s", err, out.String())
			}
			for _, want := range []string{
				`"test_odd": CANNOT BE HONOURED: delta 2 and remainder 1, and the target serves every number (no -region-count): ` +
					`migrate it with -region-count 2 -region-id 1 into the database of that region`,
				`"even": CANNOT BE HONOURED: delta 2 and remainder 0, `,
				`"shifted": CANNOT BE HONOURED: delta 1 and remainder 3, and the target serves every number (no -region-count): ` +
					`which no region of idalloc serves`,
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
			if strings.Contains(out.String(), `"order"`) || strings.Contains(out.String(), "order:") {
				t.Errorf("output names order, which idalloc can honour, or migrated it:\n%s", out.String())
			}
			if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the target file: %v, want it never made", err)
			}
		})
	}
}

// A database without Tinyid's tiny_id_info is refused naming it; one
// without tiny_id_token migrates its tags and reads no token.
func TestMigrateFromTinyidTables(t *testing.T) {
	notTinyid := storetest.SQLite().NewDB(t) // idalloc's tables only
	err := runMigrate([]string{"-from-driver", "tinyid", "-from-engine", "sqlite", "-from-dsn", notTinyid.DSN,
		"-to-driver", "sqlite", "-to-dsn", filepath.Join(t.TempDir(), "t.db")}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no tiny_id_info table") {
		t.Errorf("migrate from a database without tiny_id_info: %v, want an error naming it", err)
	}

	src := tinyidtest.New(t, "sqlite", `DROP TABLE tiny_id_token`,
		`INSERT INTO tiny_id_info (biz_type, max_id, step) VALUES ('order', 7, 10)`)
	var out strings.Builder
	if err := runMigrate([]string{"-from-driver", "tinyid", "-from-engine", "sqlite", "-from-dsn", src.DSN,
		"-to-driver", "sqlite", "-to-dsn", filepath.Join(t.TempDir(), "t.db")}, &out, io.Discard); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "order: created, max_id 7") || strings.Contains(out.String(), "token") {
		t.Errorf("output %q, want order created and no token line", out.String())
	}
}

func tagNames(tags []segment.Tag) string {
	names := make([]string, len(tags))
	for i, tg := range tags {
		names[i] = tg.AppTag
	}
	return strings.Join(names, " ")
}
