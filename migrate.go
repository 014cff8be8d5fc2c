package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// migrateMain is `idalloc migrate`: it carries every tag from one store to
// another so that no ID repeats after the move. For each source row the
// target's max_id is raised to at least the source's (never lowered), by the
// same UPDATE max_id = max_id + delta a fetch uses; missing rows are created.
// Run it with every instance on the source stopped (gracefully, so their
// unused IDs are back in the source first).
func migrateMain(args []string) error {
	fs := flag.NewFlagSet("idalloc migrate", flag.ContinueOnError)
	fromDriver := fs.String("from-driver", "sqlite", "source driver: sqlite or mysql")
	fromDSN := fs.String("from-dsn", "idalloc.db", "source DSN")
	toDriver := fs.String("to-driver", "mysql", "target driver: sqlite or mysql")
	toDSN := fs.String("to-dsn", "", "target DSN")
	initSchema := fs.Bool("init-schema", false, "apply schema.sql to a MySQL target first")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *toDSN == "" {
		return errors.New("-to-dsn is required")
	}
	if *fromDriver == "sqlite" {
		// Opening a SQLite path creates the file: a mistyped source would
		// migrate nothing and look like success.
		if _, err := os.Stat(*fromDSN); err != nil {
			return fmt.Errorf("source: %w", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	from, err := openStore(ctx, *fromDriver, *fromDSN, false)
	if err != nil {
		return fmt.Errorf("open source: %w", err)
	}
	defer from.Close()
	to, err := openStore(ctx, *toDriver, *toDSN, *initSchema)
	if err != nil {
		return fmt.Errorf("open target: %w", err)
	}
	defer to.Close()
	report := func(line string) { fmt.Fprintln(os.Stdout, line) }
	if err := migrateTags(ctx, from, to, report); err != nil {
		return err
	}
	return migrateLeases(ctx, from, to, report)
}

// leaseHistory is the part of a store that carries worker-ID history over.
type leaseHistory interface {
	LeaseTimestamps(ctx context.Context) ([]store.LeaseTimestamp, error)
	RaiseLeaseTimestamp(ctx context.Context, lt store.LeaseTimestamp) error
	Layouts(ctx context.Context) ([]store.ClusterLayout, error)
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
}

// migrateLeases carries every cluster's snowflake layout (a target already
// using another one is refused) and every worker ID's last_timestamp_ms over,
// so a new holder on the target starts after the old holders' last
// timestamp even if its clock is behind.
func migrateLeases(ctx context.Context, from, to leaseHistory, report func(string)) error {
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

func migrateTags(ctx context.Context, from, to segment.Store, report func(string)) error {
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
	for _, t := range src {
		cur, ok := have[t.AppTag]
		var line string
		switch {
		case !ok:
			err = to.CreateTag(ctx, segment.Tag{AppTag: t.AppTag, Step: t.Step, Start: t.MaxID + 1, Description: t.Description})
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
	return nil
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
