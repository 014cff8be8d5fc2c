// Package migrate is `idalloc migrate`, the copy of a store's tags,
// tokens and worker-ID history into another (from idalloc's own tables,
// Leaf's or Tinyid's), and the command line of `idalloc advance`, whose
// runbook step is package advance's: both read the server's config, open
// its stores and refuse a source still in use the same way. main
// dispatches to Migrate and Advance and passes what only it may build: the
// process's output and environment, and the opener of the lease stores
// (OpenLeases), as this package imports no lease adapter.
package migrate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/drivers"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// migrateUsage heads the flag list of `idalloc migrate -h`.
var migrateUsage = `Usage: idalloc migrate [-from-driver ` + strings.Join(drivers.SQL(), "|") + `|leaf|tinyid] [-from-dsn DSN]
                       [-from-engine ` + strings.Join(store.DriverNames(), "|") + `] [-to-driver ` + strings.Join(store.DriverNames(), "|") + `]
                       -to-dsn DSN [-init-schema] [-force] [-region-count R -region-id r]
                       [-skip-tags NAME,...]

Carries every tag from one store to another so that no ID repeats after the
move: on the target, a tag's max_id is raised to at least the source's (never
lowered), and a missing tag is created; so is each period's counter of a
dated tag (whose row carries its format, length, start and settings, and
whose max_id counts nothing); each cluster's snowflake layout and each
worker ID's last timestamp are carried over too. It prints one line per tag
and per period counter, and running it again is harmless. Stop every
instance on the source first, gracefully, so that their unused IDs are back
in it: a source still in use is refused (a SQLite file another process
holds open, a worker lease not yet expired by the database's clock), unless
-force.

The source is opened read-only and never written, so a file or database this
user may only read will do:
  sqlite    an idalloc SQLite file, opened with mode=ro.
  mysql     an idalloc MySQL/MariaDB database (segments, segment_periods,
            worker_leases, worker_layouts), read in READ ONLY sessions.
  postgres  an idalloc PostgreSQL database (its tables in the first schema
            of the search_path), read in sessions with
            default_transaction_read_only on.
  leaf      a Meituan Leaf database on MySQL: its leaf_alloc table. Each
            biz_tag becomes a tag with Leaf's max_id, step and description;
            Leaf hands out IDs below max_id, so idalloc continues above
            every ID Leaf issued. Stop Leaf's servers first.
  tinyid    a Didi Tinyid database: its tiny_id_info table, on MySQL as
            Tinyid ships (-from-engine postgres or sqlite for a copy of its
            tables there). Each biz_type becomes a tag with Tinyid's max_id
            and step; Tinyid's IDs are at most max_id, so idalloc's first is
            max_id + 1, the one Tinyid would have issued next. A row whose
            delta and remainder split its sequence between databases is
            honoured when they are the target's region (-region-count R
            -region-id r: the IDs ≡ r mod R, which the target then records
            as its region, docs/api.md §13); without those flags, only delta 1
            and remainder 0. Any other row cannot be honoured: each is
            listed and nothing is migrated, unless it is left out with
            -skip-tags (Tinyid's own sample data has one: test_odd, of
            delta 2 and remainder 1). tiny_id_token's tokens are read and
            imported, without the tags left out. Stop Tinyid's servers
            first.

A tag idalloc cannot take (a name outside ^[A-Za-z0-9_.:-]{1,64}$, a step
below 1, a max_id out of range) is not migrated: each is listed with the
reason, every other tag is migrated, and the command exits with status 1.
Create such a tag under a name idalloc accepts, with "start" above its
max_id (POST /tags), and point its clients there.

-skip-tags leaves the source tags it names out (a Leaf biz_tag, a Tinyid
biz_type): they are not copied, nor their period counters, and they are
dropped from the Tinyid tokens imported (a token left with no tag is not
imported). Each is listed as left out. A name the source does not have is
refused, naming it, before anything is written.

The region a source database serves (docs/api.md §13: region.count above 1)
comes with it: the target records the same, and a target that records
another region is refused before anything is copied, since a database
serves one region for good. -region-count R -region-id r make the target
region r of R: the way from one database to regions is a copy of it into
each region's database, each with its own -region-id (a database that
issued IDs as a single region cannot become a region in place). They are
refused for a source that records another region, and for a target that
records none and whose tags have issued IDs of its own.

A MySQL or PostgreSQL target must have idalloc's tables. -init-schema
applies schema.sql (schema_postgres.sql) first, creating missing tables and
the test_business row and adding the number-format columns (format, length,
format_key, format_spec) and segment_periods, and on MySQL turns the
TIMESTAMP columns an older schema left into DATETIME(3); without it, a MySQL
target with TIMESTAMP columns is refused with the ALTER TABLE that fixes it,
a target without the format columns takes only sequential tags, and one
without format_spec and segment_periods no dated tag. A SQLite target file
is created, with its tables, when missing.

Flags:
`

// Migrate is `idalloc migrate` with args, the arguments after the
// command's name (see migrateUsage): its report goes to stdout, a flag
// error and the usage after it to stderr. The usage asked for (-h) goes to
// stdout and is no error.
func Migrate(args []string, stdout, stderr io.Writer) error {
	return helpIsNoError(runMigrate(args, stdout, stderr))
}

// helpIsNoError is err, unless it is flag.ErrHelp: the usage was asked
// for and printed, and the command succeeded.
func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// runMigrate is Migrate, with flag.ErrHelp when the usage was asked for.
func runMigrate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("idalloc migrate", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), migrateUsage)
		fs.PrintDefaults()
	}
	fromDriver := fs.String("from-driver", drivers.SQLite, "source: "+strings.Join(drivers.SQL(), ", ")+", leaf (a Leaf leaf_alloc table on MySQL) or tinyid (a Tinyid tiny_id_info table)")
	fromDSN := fs.String("from-dsn", "idalloc.db", "source DSN: a file path for sqlite, user:pass@tcp(host:3306)/db for mysql and leaf, postgres://user:pass@host:5432/db for postgres (required but for sqlite)")
	fromEngine := fs.String("from-engine", drivers.MySQL, "the database a tinyid source is on: "+engines+" (its -from-dsn as that driver takes it)")
	toDriver := fs.String("to-driver", drivers.MySQL, "target driver: "+engines)
	toDSN := fs.String("to-dsn", "", "target DSN (required)")
	initSchema := fs.Bool("init-schema", false, "prepare a MySQL or PostgreSQL target first: create missing tables, add the number-format columns, turn MySQL TIMESTAMP columns into DATETIME(3)")
	force := fs.Bool("force", false, "copy a source still in use (a serving instance): IDs it issues after the copy may repeat on the target")
	regionCount := fs.Int64("region-count", 0, "the target's region count R, which it then records (a Tinyid source's rows of delta R are honoured)")
	regionID := fs.Int64("region-id", 0, "the target's region r, from 0 to R − 1 (a Tinyid source's rows of remainder r are honoured)")
	skipTags := fs.String("skip-tags", "", "source tags to leave out, separated by commas: not copied, nor their period counters, and dropped from the Tinyid tokens imported")
	if err := config.ParseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *toDSN == "" {
		return errors.New("-to-dsn is required")
	}
	skip, err := parseSkip(*skipTags)
	if err != nil {
		return err
	}
	fromDSNSet := false
	fs.Visit(func(f *flag.Flag) { fromDSNSet = fromDSNSet || f.Name == "from-dsn" })
	fromEngineOf, _ := store.DriverNamed(*fromDriver) // leaf and tinyid are none
	if !fromDSNSet && !fromEngineOf.Embedded {
		return fmt.Errorf("-from-dsn is required with -from-driver %s", *fromDriver)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["from-engine"] && *fromDriver != "tinyid" {
		return fmt.Errorf("-from-engine is for -from-driver tinyid; -from-driver %s names its engine itself", *fromDriver)
	}
	// The target's region, when the flags give it: the target records
	// it, and a Tinyid source's rows of that delta and remainder are
	// honoured. Without them, an idalloc source brings its own record.
	var region *segment.Region
	switch {
	case set["region-id"] && !set["region-count"]:
		return errors.New("-region-id needs -region-count")
	case set["region-count"]:
		region = &segment.Region{Count: *regionCount, ID: *regionID}
		if err := region.Check(); err != nil || *regionCount < 1 {
			return fmt.Errorf("-region-count %d -region-id %d: region.count must be from 1 to %d, region.id from 0 to region.count − 1",
				*regionCount, *regionID, segment.MaxRegions)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report := func(line string) { fmt.Fprintln(stdout, line) }
	// Before the source is opened: SQLiteHolder would report this
	// process's own locks on the file (on Linux), and its close drops them.
	var inUse []string
	if fromEngineOf.Embedded {
		why, err := sqliteInUse(*fromDSN)
		if err != nil {
			return fmt.Errorf("open source: %w", err)
		}
		inUse = append(inUse, why...)
	}
	from, err := openSource(ctx, *fromDriver, *fromEngine, *fromDSN)
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	defer from.Close()
	// Before the target is opened, which -init-schema would change.
	if err := skip.check(ctx, from); err != nil {
		return err
	}
	tinyid, isTinyid := from.(tinyidSource)
	if isTinyid {
		if err := checkTinyid(ctx, tinyid, region, skip, report); err != nil {
			return err
		}
	}
	why, err := leasesInUse(ctx, from)
	if err != nil {
		return fmt.Errorf("read source: %w", err)
	}
	if inUse = append(inUse, why...); len(inUse) > 0 {
		if !*force {
			return sourceInUseError{driver: *fromDriver, reasons: inUse}
		}
		for _, w := range inUse {
			report("source in use, copied anyway (-force): " + w)
		}
	}
	to, err := store.Open(ctx, *toDriver, *toDSN, store.Options{
		InitSchema: *initSchema, Report: func(change string) { report("init-schema: " + change) },
	})
	if err != nil {
		return fmt.Errorf("open target: %w", err)
	}
	defer to.Close()
	if err := migrateRegion(ctx, from, to, region, report); err != nil {
		return err
	}
	carried, tagsErr := migrateTags(ctx, from, to, skip, report)
	if tagsErr != nil && !errors.As(tagsErr, new(refusedTagsError)) {
		return tagsErr
	}
	// The valid tags moved; so do their period counters and the worker-ID
	// history, whatever was refused.
	periodsErr := migratePeriods(ctx, from, to, carried, skip, report)
	if periodsErr != nil && !errors.As(periodsErr, new(refusedPeriodsError)) {
		return periodsErr
	}
	if err := migrateLeases(ctx, from, to, report); err != nil {
		return err
	}
	if isTinyid {
		if err := migrateTinyidTokens(ctx, tinyid, to, skip, report); err != nil {
			return err
		}
	}
	return errors.Join(tagsErr, periodsErr)
}

// source is what migrate reads: a store.ReadOnly.
type source interface {
	tagSource
	periodSource
	historySource
	regionSource
	LiveLeases(ctx context.Context) ([]store.LiveLease, error)
	Close() error
}

// tagSource is the part of a source migrateTags reads.
type tagSource interface {
	Tags(ctx context.Context) ([]segment.Tag, error)
}

// openSource opens the source read-only: migrate never writes to it.
// engine is the database a tinyid source is on.
func openSource(ctx context.Context, driver, engine, dsn string) (source, error) {
	if d, ok := store.DriverNamed(driver); ok {
		return d.OpenReadOnly(ctx, dsn)
	}
	switch driver {
	case "leaf":
		return store.OpenLeaf(ctx, dsn)
	case "tinyid":
		return store.OpenTinyid(ctx, engine, dsn)
	}
	return nil, fmt.Errorf("unknown driver %q (want %s, leaf or tinyid)", driver, strings.Join(drivers.SQL(), ", "))
}

// engines lists the SQL engines a target or a Tinyid source may be on.
var engines = drivers.Or(store.DriverNames())
