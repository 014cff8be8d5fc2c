package migrate

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/internal/tinyidtest"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestMigrateTinyidSampleData: Tinyid's own db.sql, from each engine a
// copy of its tables may be on to each target. Its test_odd (delta 2,
// remainder 1) blocks the migration, whose error says how to leave it
// out; with -skip-tags test_odd, test is migrated, test_odd is listed as
// left out and is not on the target, and the token allowed both is
// imported for test alone; a second run is harmless.
func TestMigrateTinyidSampleData(t *testing.T) {
	for _, engine := range tinyidtest.Engines {
		for _, target := range storetest.Drivers() {
			t.Run(engine+"_to_"+target.Name, func(t *testing.T) {
				ctx := t.Context()
				src := tinyidtest.New(t, engine, tinyidtest.Sample...)
				toDB := target.NewDB(t)
				cmd := []string{"-from-driver", "tinyid", "-from-engine", engine, "-from-dsn", src.DSN,
					"-to-driver", toDB.Driver, "-to-dsn", toDB.DSN}

				var out strings.Builder
				err := runMigrate(cmd, &out, io.Discard)
				var refused tinyidRefusedError
				if !errors.As(err, &refused) || !strings.HasSuffix(err.Error(), "; to migrate the others without them, add -skip-tags test_odd") {
					t.Fatalf("migrate without -skip-tags = %v, want test_odd refused, saying -skip-tags test_odd\n%s", err, out.String())
				}
				if strings.Contains(out.String(), "created") {
					t.Fatalf("a refused migration created tags:\n%s", out.String())
				}

				cmd = append(cmd, "-skip-tags", "test_odd")
				for run := 1; run <= 2; run++ {
					out.Reset()
					if err := runMigrate(cmd, &out, io.Discard); err != nil {
						t.Fatalf("run %d: migrate -skip-tags test_odd = %v\n%s", run, err, out.String())
					}
					token := map[int]string{
						1: `token tinyid-1 for ["test"]: imported (Tinyid's secret kept as the chosen token; without ["test_odd"], left out)`,
						2: `token tinyid-1 for ["test"]: there already`,
					}[run]
					tag := map[int]string{1: "test: created, max_id 1", 2: "test: target max_id 1 already >= 1"}[run]
					for _, want := range []string{`"test_odd": left out (-skip-tags)`, tag, token} {
						if !strings.Contains(out.String(), want) {
							t.Errorf("run %d: output lacks %q:\n%s", run, want, out.String())
						}
					}
					if strings.Contains(out.String(), "0f673adf") || strings.Contains(out.String(), "CANNOT") {
						t.Errorf("run %d: output shows the secret or a refusal:\n%s", run, out.String())
					}
				}

				to := toDB.Open(t)
				a, err := segment.New(ctx, to, segment.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer a.Close(ctx)
				if id, err := a.Next(ctx, "test"); err != nil || id != 2 {
					t.Errorf("test's first ID on the target = %d, %v; want 2, the one Tinyid would have issued next", id, err)
				}
				if names := tagNames(a.Tags()); names != "test test_business" {
					t.Errorf("target tags %s, want test and test_business", names)
				}
				guard, err := access.NewGuard(ctx, to, access.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer guard.Close()
				if err := guard.Allow("0f673adf80504e2eaa552f5d791b644c", "test"); err != nil {
					t.Errorf("Tinyid's sample token on test: %v, want allowed", err)
				}
				if err := guard.Allow("0f673adf80504e2eaa552f5d791b644c", "test_odd"); !errors.Is(err, access.ErrForbidden) {
					t.Errorf("Tinyid's sample token on test_odd: %v, want forbidden", err)
				}
			})
		}
	}
}

// TestMigrateSkipTagsRefusals: a name the source does not have, or an
// empty one, is refused naming it before anything is written (a SQLite
// target file is never made); a token whose tags are all left out is
// listed and not imported.
func TestMigrateSkipTagsRefusals(t *testing.T) {
	src := tinyidtest.New(t, "sqlite", tinyidtest.Sample...)
	base := []string{"-from-driver", "tinyid", "-from-engine", "sqlite", "-from-dsn", src.DSN, "-to-driver", "sqlite"}
	for _, c := range []struct{ skip, want string }{
		{"test_odd,nope,tset", `-skip-tags names "nope", "tset", which the source does not have; nothing was migrated`},
		{"test_odd,,test", `-skip-tags "test_odd,,test": an empty name`},
		{" ", `-skip-tags " ": an empty name`},
	} {
		target := filepath.Join(t.TempDir(), "idalloc.db")
		var out strings.Builder
		err := runMigrate(append(base, "-to-dsn", target, "-skip-tags", c.skip), &out, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("-skip-tags %q: %v, want %q", c.skip, err, c.want)
		}
		if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) || out.Len() != 0 {
			t.Errorf("-skip-tags %q: the target file %v, output %q; want neither", c.skip, err, out.String())
		}
	}

	var out strings.Builder
	target := filepath.Join(t.TempDir(), "idalloc.db")
	if err := runMigrate(append(base, "-to-dsn", target, "-skip-tags", "test_odd, test"), &out, io.Discard); err != nil {
		t.Fatalf("migrate -skip-tags 'test_odd, test' = %v\n%s", err, out.String())
	}
	for _, want := range []string{`"test": left out (-skip-tags)`, `"test_odd": left out (-skip-tags)`,
		`token tinyid-1 for ["test" "test_odd"]: not imported: every tag of it is left out (-skip-tags)`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestMigrateSkipTagsLeavesPeriods: -skip-tags leaves out any source's
// tags, a dated one's period counters with it, which are then no refusal.
func TestMigrateSkipTagsLeavesPeriods(t *testing.T) {
	ctx := t.Context()
	fromDB := storetest.SQLite().NewDB(t)
	from := fromDB.Open(t)
	a, err := segment.New(ctx, from, segment.Config{Now: testclock.New(shanghai(26)).Now, MaxClockSkew: farClocks})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateTag(ctx, segment.NewTag{AppTag: "ord", Step: 10, Format: segment.FormatDated, Period: dated.Day}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.NextText(ctx, "ord"); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := from.Close(); err != nil {
		t.Fatal(err)
	}
	toDB := storetest.SQLite().NewDB(t)
	var out strings.Builder
	err = runMigrate([]string{"-from-driver", "sqlite", "-from-dsn", fromDB.DSN, "-to-driver", "sqlite", "-to-dsn", toDB.DSN,
		"-skip-tags", "ord"}, &out, io.Discard)
	if err != nil {
		t.Fatalf("migrate -skip-tags ord = %v\n%s", err, out.String())
	}
	for _, want := range []string{`"ord": left out (-skip-tags)`, `tag "ord" period 20261126: left out with its tag (-skip-tags)`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if got := countersOf(t, toDB.Open(t), "ord"); len(got) != 0 {
		t.Errorf("the target has ord's counters %+v, want none", got)
	}
}
