package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// migrateUsage heads the flag list of `idalloc migrate -h`.
const migrateUsage = `Usage: idalloc migrate [-from-driver sqlite|mysql|leaf] [-from-dsn DSN]
                       [-to-driver mysql|sqlite] -to-dsn DSN [-init-schema] [-force]

Carries every tag from one store to another so that no ID repeats after the
move: on the target, a tag's max_id is raised to at least the source's (never
lowered), and a missing tag is created; each cluster's snowflake layout and
each worker ID's last timestamp are carried over too. It prints one line per
tag, and running it again is harmless. Stop every instance on the source
first, gracefully, so that their unused IDs are back in it: a source still
in use is refused (a SQLite file another process holds open, a worker
lease not yet expired by the database's clock), unless -force.

The source is opened read-only and never written, so a file or database this
user may only read will do:
  sqlite  an idalloc SQLite file, opened with mode=ro.
  mysql   an idalloc MySQL/MariaDB database (segments, worker_leases,
          worker_layouts), read in READ ONLY sessions.
  leaf    a Meituan Leaf database on MySQL: its leaf_alloc table. Each
          biz_tag becomes a tag with Leaf's max_id, step and description;
          Leaf hands out IDs below max_id, so idalloc continues above every
          ID Leaf issued. Stop Leaf's servers first.

A tag idalloc cannot take (a name outside ^[A-Za-z0-9_.:-]{1,64}$, a step
below 1, a max_id out of range) is not migrated: each is listed with the
reason, every other tag is migrated, and the command exits with status 1.
Create such a tag under a name idalloc accepts, with "start" above its
max_id (POST /tags), and point its clients there.

A MySQL target must have idalloc's tables. -init-schema applies schema.sql
first (creating missing tables and the test_business row) and turns the
TIMESTAMP columns an older schema left into DATETIME(3), and adds the
number-format columns (format, length, format_key); without it, a target
with TIMESTAMP columns is refused with the ALTER TABLE that fixes it, and
one without the format columns takes only sequential tags.

Flags:
`

// migrateMain is `idalloc migrate`; see migrateUsage.
func migrateMain(args []string) error {
	err := migrate(args, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // the usage was asked for and printed
	}
	return err
}

func migrate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("idalloc migrate", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), migrateUsage)
		fs.PrintDefaults()
	}
	fromDriver := fs.String("from-driver", "sqlite", "source: sqlite, mysql, or leaf (a Leaf leaf_alloc table on MySQL)")
	fromDSN := fs.String("from-dsn", "idalloc.db", "source DSN: a file path for sqlite, user:pass@tcp(host:3306)/db for mysql and leaf (required for those)")
	toDriver := fs.String("to-driver", "mysql", "target driver: mysql or sqlite")
	toDSN := fs.String("to-dsn", "", "target DSN (required)")
	initSchema := fs.Bool("init-schema", false, "prepare a MySQL target first: create missing tables, turn TIMESTAMP columns into DATETIME(3), add the number-format columns")
	force := fs.Bool("force", false, "copy a source still in use (a serving instance): IDs it issues after the copy may repeat on the target")
	if err := config.ParseFlags(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *toDSN == "" {
		return errors.New("-to-dsn is required")
	}
	fromDSNSet := false
	fs.Visit(func(f *flag.Flag) { fromDSNSet = fromDSNSet || f.Name == "from-dsn" })
	if !fromDSNSet && *fromDriver != "sqlite" {
		return fmt.Errorf("-from-dsn is required with -from-driver %s", *fromDriver)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	report := func(line string) { fmt.Fprintln(stdout, line) }
	// Before the source is opened: SQLiteHolder would report this
	// process's own locks on the file (on Linux), and its close drops them.
	var inUse []string
	if *fromDriver == "sqlite" {
		why, err := sqliteInUse(*fromDSN)
		if err != nil {
			return fmt.Errorf("open source: %w", err)
		}
		inUse = append(inUse, why...)
	}
	from, err := openSource(ctx, *fromDriver, *fromDSN)
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	defer from.Close()
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
	to, err := openStore(ctx, *toDriver, *toDSN, *initSchema, func(change string) { report("init-schema: " + change) })
	if err != nil {
		return fmt.Errorf("open target: %w", err)
	}
	defer to.Close()
	tagsErr := migrateTags(ctx, from, to, report)
	var refused refusedTagsError
	if tagsErr != nil && !errors.As(tagsErr, &refused) {
		return tagsErr
	}
	// The valid tags moved; so does the worker-ID history, whatever was
	// refused.
	if err := migrateLeases(ctx, from, to, report); err != nil {
		return err
	}
	return tagsErr
}

// source is what migrate reads: a store.ReadOnly.
type source interface {
	tagSource
	historySource
	LiveLeases(ctx context.Context) ([]store.LiveLease, error)
	Close() error
}

// tagSource is the part of a source migrateTags reads.
type tagSource interface {
	Tags(ctx context.Context) ([]segment.Tag, error)
}

// openSource opens the source read-only: migrate never writes to it.
func openSource(ctx context.Context, driver, dsn string) (source, error) {
	switch driver {
	case "sqlite":
		return store.OpenSQLiteReadOnly(ctx, dsn)
	case "mysql":
		return store.OpenMySQLReadOnly(ctx, dsn)
	case "leaf":
		return store.OpenLeaf(ctx, dsn)
	}
	return nil, fmt.Errorf("unknown driver %q (want sqlite, mysql or leaf)", driver)
}

// leaseHistory is the part of a store that carries worker-ID history over.
type leaseHistory interface {
	LeaseTimestamps(ctx context.Context) ([]store.LeaseTimestamp, error)
	RaiseLeaseTimestamp(ctx context.Context, lt store.LeaseTimestamp) error
	Layouts(ctx context.Context) ([]store.ClusterLayout, error)
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
}

// historySource is the part of a source migrateLeases reads.
type historySource interface {
	LeaseTimestamps(ctx context.Context) ([]store.LeaseTimestamp, error)
	Layouts(ctx context.Context) ([]store.ClusterLayout, error)
}

// migrateLeases carries every cluster's snowflake layout (a target already
// using another one is refused) and every worker ID's last_timestamp_ms over,
// so a new holder on the target starts after the old holders' last
// timestamp even if its clock is behind.
func migrateLeases(ctx context.Context, from historySource, to leaseHistory, report func(string)) error {
	layouts, err := from.Layouts(ctx)
	if err != nil {
		return err
	}
	for _, l := range layouts {
		if err := to.CheckLayout(ctx, l.Cluster, l.EpochMS, l.WorkerBits); err != nil {
			return err
		}
	}
	rows, err := from.LeaseTimestamps(ctx)
	if err != nil {
		return err
	}
	for _, lt := range rows {
		if err := to.RaiseLeaseTimestamp(ctx, lt); err != nil {
			return err
		}
	}
	report(fmt.Sprintf("worker leases: %d last timestamps carried over", len(rows)))
	return nil
}

// refusedTagsError reports the source tags that were not migrated; each was
// listed in the report with its reason.
type refusedTagsError struct{ refused, total int }

func (e refusedTagsError) Error() string {
	return fmt.Sprintf("%d of %d tags not migrated (listed above, each with the reason); every other tag was", e.refused, e.total)
}

// migrateTags carries every tag idalloc can take, reports each one it
// cannot with the reason, and then returns a refusedTagsError if any was.
func migrateTags(ctx context.Context, from tagSource, to segment.Store, report func(string)) error {
	src, err := from.Tags(ctx)
	if err != nil {
		return fmt.Errorf("read source tags: %w", err)
	}
	dst, err := to.Tags(ctx)
	if err != nil {
		return fmt.Errorf("read target tags: %w", err)
	}
	have := make(map[string]segment.Tag, len(dst))
	for _, t := range dst {
		have[t.AppTag] = t
	}
	refused := 0
	for _, t := range src {
		if why := refusal(t); why != "" {
			// %q: the name is the source's, not checked, and may hold
			// anything a terminal would act on.
			report(fmt.Sprintf("%q: NOT MIGRATED: %s", t.AppTag, why))
			refused++
			continue
		}
		cur, ok := have[t.AppTag]
		if ok && !sameFormat(cur, t) {
			// Raising max_id would not make the target's IDs the
			// source's: another format (or key) maps the same sequence
			// to other numbers, which may repeat ones issued there.
			report(fmt.Sprintf("%q: NOT MIGRATED: the target has it as %s, the source as %s", t.AppTag, formatName(cur), formatName(t)))
			refused++
			continue
		}
		var line string
		switch {
		case !ok:
			// The format, length and a scrambled tag's key come along:
			// the tag's next IDs continue its sequence in its format.
			err = to.CreateTag(ctx, segment.Tag{AppTag: t.AppTag, Step: t.Step, Start: t.MaxID + 1, Description: t.Description,
				Format: t.Format, Length: t.Length, FormatKey: t.FormatKey})
			line = fmt.Sprintf("%s: created, max_id %d", t.AppTag, t.MaxID)
		case cur.MaxID < t.MaxID:
			err = raise(ctx, to, t.AppTag, cur.MaxID, t.MaxID)
			line = fmt.Sprintf("%s: max_id raised from %d to at least %d", t.AppTag, cur.MaxID, t.MaxID)
		default:
			line = fmt.Sprintf("%s: target max_id %d already >= %d", t.AppTag, cur.MaxID, t.MaxID)
		}
		if err != nil {
			return fmt.Errorf("migrate %q: %w", t.AppTag, err)
		}
		report(line)
	}
	if refused > 0 {
		return refusedTagsError{refused: refused, total: len(src)}
	}
	return nil
}

// refusal says why idalloc cannot take t as it is, or "" when it can:
// what no row may hold (segment.CheckRow, in its words), or a tag with no
// ID left to issue, which there is no point in carrying.
func refusal(t segment.Tag) string {
	if err := segment.CheckRow(t); err != nil {
		if e, ok := errs.Describe(err); ok {
			return e.Reason
		}
		return err.Error()
	}
	if t.MaxID >= segment.MaxUsableID {
		return fmt.Sprintf("max_id %d leaves no ID up to idalloc's highest, %d", t.MaxID, segment.MaxUsableID)
	}
	return ""
}

// sameFormat reports whether a and b serve their sequence as the same IDs.
func sameFormat(a, b segment.Tag) bool {
	return cmp.Or(a.Format, segment.FormatSequential) == cmp.Or(b.Format, segment.FormatSequential) &&
		a.Length == b.Length && bytes.Equal(a.FormatKey, b.FormatKey)
}

// formatName names t's format for a report, without its key.
func formatName(t segment.Tag) string {
	f := cmp.Or(t.Format, segment.FormatSequential)
	if f == segment.FormatSequential {
		return string(f)
	}
	s := fmt.Sprintf("%s of length %d", f, t.Length)
	if f == segment.FormatScrambled {
		s += " (with its own key)"
	}
	return s
}

// raise advances tag's max_id on st to at least want, from a read of have.
// It checks what each fetch returns and goes on until it is there: a live
// instance on the target may give IDs back between the read and the fetch.
func raise(ctx context.Context, st segment.Store, tag string, have, want int64) error {
	for have < want {
		f, err := st.Fetch(ctx, tag, want-have)
		if err != nil {
			return err
		}
		have = f.MaxID
	}
	return nil
}
