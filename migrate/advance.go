package migrate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/advance"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// advanceUsage heads the flag list of `idalloc advance -h`.
const advanceUsage = `Usage: idalloc advance (-by COUNT | -for DURATION) [-tags a,b] [-instances N]
                       [-lease-for DURATION] [-only segments|leases] [-dry-run]
                       [-config PATH]

The step to run after any restore or failover that may have lost writes: a
database restored from a backup or failed over to an asynchronous replica,
a Redis or etcd rebuilt or restored from a snapshot. It reads the same
config file and IDALLOC_* variables as the server and moves, in the stores
that config names:

  - every tag's max_id (or those of -tags) forward by -by COUNT, or by an
    estimate from -for DURATION, the span of the lost history: from when
    the restored data was taken until the last instance that ran on the
    lost writes stopped. The estimate is, per tag,
      max(segment.max_step, the tag's step) × (DURATION in 15-minute
      segments, rounded up, + 2) × -instances
    since an instance below its step cap takes at most one cap per 15
    minutes (the adaptive step doubles after a faster segment). A tag that
    ran faster needs -by, from idalloc_ids_issued_total.
  - for a dated tag, whose row's max_id counts nothing, the counters of its
    periods instead, by this machine's clock in the tag's time zone (refused
    when it is off the store's by more than dated.max_clock_skew): the
    current and the previous period, the next one when it begins within a
    minute, and with -for every period of the span. Each moves by -by, or by
    the estimate with the step cap of dated tags (1/100 of a period's
    numbers) over the span or the period, whichever is shorter. A move
    stops at the period's last number: its numbers are spent then, which is
    safe, and the tag answers period_exhausted until the next period.
  - every worker lease's last_timestamp_ms, in every cluster, to at least
    now + -lease-for (default: -for, and never less than snowflake.lease_ttl
    + snowflake.max_drift_error, the longest a forgotten holder may still
    issue IDs), so the next holder of each worker ID starts after it.

In the database of one region of several (docs/api.md §13: region.count above
1; the database's record says which, else the config), a tag's IDs are one
number in region.count, and -by and the estimate count them: each max_id
moves by region.count times as much.

Each move is one compare-and-set, retried from the new value when an
instance wrote in between; nothing is ever lowered. Bad input and unknown
tags are refused before anything moves. It prints one line per tag (per
period, for a dated tag) and per worker lease and a summary. Running it again moves everything further:
harmless, but it spends numbers.

Flags:
`

// OpenLeases opens the lease store c names (lease.driver) for the
// deployment whose main store is st: st itself for "sql", or a Redis or an
// etcd of its own. It returns the store and how to close what it opened.
// main passes it: the adapters are main's to import, not this package's.
type OpenLeases func(st store.Store, c config.LeaseConfig) (leases advance.Leases, closeLeases func(), err error)

// Advance is `idalloc advance` with args, the arguments after the
// command's name (see advanceUsage). It reads the config file and the
// IDALLOC_* variables of environ (os.Environ's form) as the server does,
// and opens the store they name and, for the leases, what openLeases
// opens. Its report goes to stdout, a flag error and the usage after it
// to stderr. The usage asked for (-h) goes to stdout and is no error.
func Advance(args []string, stdout, stderr io.Writer, environ []string, openLeases OpenLeases) error {
	return helpIsNoError(runAdvance(args, stdout, stderr, environ, openLeases))
}

// advanceFlags are advance's flags as given.
type advanceFlags struct {
	configPath     string
	configRequired bool // -config was given
	by             int64
	forD           time.Duration
	tags           []string
	instances      int
	leaseFor       time.Duration
	segments       bool
	leases         bool
	dryRun         bool
}

// parseAdvance reads advance's flags and refuses the combinations that make
// no sense; advance.Advance.Check refuses the values. The usage asked
// for goes to stdout, with a flag error to stderr.
func parseAdvance(args []string, stdout, stderr io.Writer) (advanceFlags, error) {
	var f advanceFlags
	fs := flag.NewFlagSet("idalloc advance", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), advanceUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.configPath, "config", "config.json", "config file (JSON), as the server's")
	fs.Int64Var(&f.by, "by", 0, "move each tag's max_id (a dated tag's period counters) forward by this many")
	fs.DurationVar(&f.forD, "for", 0, "move each tag by an estimate for this span of lost history (e.g. 2h), and the leases to now + it")
	tags := fs.String("tags", "", "comma-separated tags to move (default: every tag)")
	fs.IntVar(&f.instances, "instances", 1, "instances that served the tags meanwhile, for -for's estimate")
	fs.DurationVar(&f.leaseFor, "lease-for", 0, "move the leases to now + this (default: -for, at least snowflake.lease_ttl + snowflake.max_drift_error)")
	only := fs.String("only", "", `"segments" or "leases": move only those (default: both)`)
	fs.BoolVar(&f.dryRun, "dry-run", false, "print what would move, and write nothing")
	if err := config.ParseFlags(fs, args, stdout, stderr); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	f.configRequired = set["config"]
	switch *only {
	case "":
		f.segments, f.leases = true, true
	case "segments":
		f.segments = true
	case "leases":
		f.leases = true
	default:
		return f, fmt.Errorf(`-only %q: want "segments" or "leases"`, *only)
	}
	for t := range strings.SplitSeq(*tags, ",") {
		if t = strings.TrimSpace(t); t != "" {
			f.tags = append(f.tags, t)
		}
	}
	switch {
	case set["by"] && f.by < 1:
		return f, fmt.Errorf("-by %d: must be at least 1", f.by)
	case set["for"] && f.forD <= 0:
		return f, fmt.Errorf("-for %s: must be positive", f.forD)
	case set["lease-for"] && f.leaseFor <= 0:
		return f, fmt.Errorf("-lease-for %s: must be positive", f.leaseFor)
	case set["instances"] && !set["for"]:
		return f, errors.New("-instances sizes -for's estimate: give it with -for")
	case set["tags"] && len(f.tags) == 0:
		return f, errors.New("-tags names no tag")
	case !f.segments && (set["by"] || set["tags"]):
		return f, errors.New("-only leases moves no tag: drop -by and -tags")
	case !f.leases && set["lease-for"]:
		return f, errors.New("-only segments moves no lease: drop -lease-for")
	}
	return f, nil
}

// advanceOf is the run f asks for under cfg, without its stores.
func advanceOf(f advanceFlags, cfg config.Settings) advance.Advance {
	a := advance.Advance{
		Segments: f.segments,
		Leases:   f.leases,
		Tags:     f.tags,
		LeaseFor: f.leaseFor,
		LeaseMin: cfg.Snowflake.LeaseTTL.Duration() + cfg.Snowflake.MaxDriftError.Duration(),
		DryRun:   f.dryRun,
		// The instances' bound: the periods advance moves are chosen by
		// this machine's clock, checked against the store's by it.
		MaxClockSkew: cfg.Dated.MaxClockSkew.Duration(),
	}
	if f.segments {
		a.By = f.by
		if f.forD > 0 {
			a.Estimate = advance.Estimate{For: f.forD, MaxStep: cfg.Segment.MaxStep, Instances: f.instances}
		}
	} else {
		// -for with -only leases only says how far the leases move.
		a.Estimate.For = f.forD
	}
	return a
}

// runAdvance is Advance, with flag.ErrHelp when the usage was asked for.
func runAdvance(args []string, stdout, stderr io.Writer, environ []string, openLeases OpenLeases) error {
	a, cfg, err := planAdvance(args, stdout, stderr, environ)
	if err != nil {
		return err
	}
	a.Report = func(line string) { fmt.Fprintln(stdout, line) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, cfg.Driver, cfg.DSN, store.Options{})
	if err != nil {
		return store.OpenError(cfg.Driver, cfg.Origin("dsn"), err)
	}
	defer st.Close()
	if a.Segments {
		if a.Region, err = advanceRegion(ctx, st, cfg); err != nil {
			return err
		}
	}
	var leases advance.Leases
	if a.Leases {
		ls, closeLeases, err := openLeases(st, cfg.Lease)
		if err != nil {
			return err
		}
		defer closeLeases()
		leases = ls
	}
	if err := a.Run(ctx, advanceStore{st}, leases); err != nil {
		return err
	}
	if !a.DryRun {
		recordAdvance(ctx, st, a, stderr)
	}
	return nil
}

// advanceRegion is the region whose IDs a move counts: the one the
// database records, which is what it serves, or else the config's (an
// instance of several regions records its region at its first start, so
// a database without a record has served a single region, or none yet).
func advanceRegion(ctx context.Context, st segment.RegionStore, cfg config.Settings) (segment.Region, error) {
	r, ok, err := st.RegionRecord(ctx)
	if err != nil || ok {
		return r, err
	}
	return cfg.Region.Region(), nil
}

// recordAdvance writes a run that moved the store to its audit log (docs/api.md
// §12), the caller this command on this host. The run is made, so a
// failure to record it is told on stderr, not returned: the exit status
// says whether the store moved.
func recordAdvance(ctx context.Context, st store.Store, a advance.Advance, stderr io.Writer) {
	admin, err := access.NewAdmin(st, segment.ValidTag, nil, "") // for the audit log: no token is made
	if err == nil {
		host, _ := os.Hostname()
		var subject string
		if len(a.Tags) == 1 {
			subject = a.Tags[0]
		}
		detail := struct {
			Segments bool     `json:"segments"`
			By       int64    `json:"by,omitempty"`
			For      string   `json:"for,omitempty"`
			Tags     []string `json:"tags,omitempty"`
			Leases   bool     `json:"leases"`
			LeaseFor string   `json:"lease_for,omitempty"`
		}{a.Segments, a.By, durationText(a.Estimate.For), a.Tags, a.Leases, durationText(a.LeaseFor)}
		err = admin.Record(ctx, "idalloc advance on "+host, access.ActionAdvance, subject, detail)
	}
	if err != nil {
		fmt.Fprintln(stderr, "idalloc advance: the store moved, but the audit log does not say so:", err)
	}
}

// durationText is d as a flag takes it, "" for none.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// advanceStore is a store as advance.Advance moves it: its period
// counters listed in migrate's type, as that package imports no store.
type advanceStore struct{ store.Store }

func (s advanceStore) PeriodCounters(ctx context.Context) ([]advance.PeriodCounter, error) {
	list, err := s.Periods(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]advance.PeriodCounter, len(list))
	for i, c := range list {
		out[i] = advance.PeriodCounter{AppTag: c.AppTag, Stamp: c.Stamp, MaxID: c.MaxID}
	}
	return out, nil
}

// planAdvance parses args, loads the config they name and checks the run:
// whatever advance refuses, it refuses here, before a connection, let
// alone a write.
func planAdvance(args []string, stdout, stderr io.Writer, environ []string) (advance.Advance, config.Settings, error) {
	f, err := parseAdvance(args, stdout, stderr)
	if err != nil {
		return advance.Advance{}, config.Settings{}, err
	}
	cfg, err := config.Load(f.configPath, f.configRequired, environ)
	if err != nil {
		return advance.Advance{}, config.Settings{}, err
	}
	a := advanceOf(f, cfg)
	return a, cfg, a.Check()
}
