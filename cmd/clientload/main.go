// Command clientload measures idalloc's Go client (package client) against
// a live idalloc: G goroutines call Client.Next on one tag for a duration
// (with -unordered, each goroutine Next of a client.Unordered of its own),
// while the client refills its buffer from the server in the background,
// as a caller in production would. It reports the IDs per second the
// callers got and checks every ID: none handed out twice (a bitmap per
// goroutine, compared at the end) and each goroutine's IDs strictly
// increasing (the client's promise, in both modes, while one instance
// serves it; with several URLs order violations are reported, not
// failed).
//
//	clientload -url http://127.0.0.1:8880 -tag test_business -d 10s
//	clientload -g 4 -max-range 100000 -json result.json -q
//	clientload -unordered -d 10s
//
// The figure is the client and the server together: how fast one tag of
// one client is fed, not Next's own cost (client's BenchmarkNext is that).
// Only loopback URLs are accepted unless -allow-remote is given. Exit
// status: 0 when every check passed, 2 when one failed, 1 when the run
// could not be made (a Next error stops it).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/idalloc/idalloc/client"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

// report is the JSON report: flat keys, as idload's, so scripts read them
// with sed.
type report struct {
	URLs            []string `json:"urls"`
	Tag             string   `json:"tag"`
	Goroutines      int      `json:"goroutines"`
	GOMAXPROCS      int      `json:"gomaxprocs"`
	MaxBatch        int      `json:"max_batch"`
	MaxRange        int      `json:"max_range"`
	Unordered       bool     `json:"unordered"`
	GoVersion       string   `json:"go_version"`
	WarmupS         float64  `json:"warmup_s"`
	ElapsedS        float64  `json:"elapsed_s"`
	IDs             int64    `json:"ids"`       // measured phase
	TotalIDs        int64    `json:"total_ids"` // warm-up included
	IDsPerS         float64  `json:"ids_per_s"`
	IDsChecked      int64    `json:"ids_checked"`
	Duplicates      int64    `json:"duplicates"`
	OrderViolations int64    `json:"order_violations"`
	Pass            bool     `json:"pass"`
}

func mainErr(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("clientload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	urls := fs.String("url", "http://127.0.0.1:8880", "idalloc base URL(s), comma-separated")
	tag := fs.String("tag", "test_business", "app_tag to take IDs of")
	g := fs.Int("g", runtime.GOMAXPROCS(0), "goroutines calling Next")
	d := fs.Duration("d", 10*time.Second, "measured duration")
	warmup := fs.Duration("warmup", 0, "warm-up before the measured phase (IDs checked, not counted)")
	maxBatch := fs.Int("max-batch", 0, "client.Config.MaxBatch, for tags fetched as lists (0: the client's default, the server's default max_batch)")
	maxRange := fs.Int("max-range", 0, "client.Config.MaxRange, for tags fetched as ranges (0: the client's default, the server's default max_range)")
	unordered := fs.Bool("unordered", false, "each goroutine takes IDs from a client.Unordered of its own (blocks, no order across goroutines)")
	allowRemote := fs.Bool("allow-remote", false, "allow non-loopback base URLs")
	jsonOut := fs.String("json", "", `write the JSON report to this file ("-": stdout)`)
	quiet := fs.Bool("q", false, "no summary line")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	cfg := client.Config{MaxBatch: *maxBatch, MaxRange: *maxRange}
	for u := range strings.SplitSeq(*urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.URLs = append(cfg.URLs, u)
		}
	}
	err := checkArgs(fs, cfg.URLs, *g, *d, *warmup, *allowRemote)
	if err != nil {
		fmt.Fprintln(stderr, "clientload:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg, *tag, *unordered, *g, *warmup, *d)
	if err != nil {
		fmt.Fprintln(stderr, "clientload:", err)
		return 1
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			b = append(b, '\n')
			if *jsonOut == "-" {
				_, err = stdout.Write(b)
			} else {
				err = os.WriteFile(*jsonOut, b, 0o644)
			}
		}
		if err != nil {
			fmt.Fprintln(stderr, "clientload:", err)
			return 1
		}
	}
	if !*quiet {
		mode := ""
		if rep.Unordered {
			mode = " (unordered)"
		}
		fmt.Fprintf(stderr, "clientload: %d goroutines%s, %.2fs: %.0f IDs/s; %d IDs checked, %d duplicates, %d order violations\n",
			rep.Goroutines, mode, rep.ElapsedS, rep.IDsPerS, rep.IDsChecked, rep.Duplicates, rep.OrderViolations)
	}
	if !rep.Pass {
		return 2
	}
	return 0
}

func checkArgs(fs *flag.FlagSet, urls []string, g int, d, warmup time.Duration, allowRemote bool) error {
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case len(urls) == 0:
		return errors.New("-url: at least one base URL")
	case g < 1 || g > 10_000:
		return fmt.Errorf("-g %d: want 1 to 10000 goroutines", g)
	case d <= 0 || d > time.Hour:
		return fmt.Errorf("-d %s: want a duration above 0 and at most 1h", d)
	case warmup < 0 || warmup > time.Hour:
		return fmt.Errorf("-warmup %s: want 0 to 1h", warmup)
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return fmt.Errorf("-url %q: want http://host:port[/prefix]", raw)
		}
		if ip := net.ParseIP(u.Hostname()); !allowRemote && !strings.EqualFold(u.Hostname(), "localhost") && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("-url %q: %s is not a loopback address; pass -allow-remote to load another host", raw, u.Hostname())
		}
	}
	return nil
}

// worker is one calling goroutine. n, its count, is written by it alone
// every 256 IDs (an atomic store is a locked instruction on amd64) and read
// by run at the phase boundaries; the padding keeps it off its neighbours'
// cache lines.
type worker struct {
	_     [64]byte
	n     atomic.Int64
	_     [56]byte
	set   idSet
	order int64
	err   error
}

func (w *worker) run(ctx context.Context, c *client.Client, tag string, unordered bool, stop *atomic.Bool) {
	var prev, n int64
	var u *client.Unordered
	if unordered {
		u = c.Unordered(tag)
	}
	for !stop.Load() {
		var id int64
		var err error
		if u != nil {
			id, err = u.Next(ctx)
		} else {
			id, err = c.Next(ctx, tag)
		}
		if err != nil {
			if !stop.Load() {
				w.err = err
			}
			return
		}
		if id <= prev {
			w.order++
		}
		prev = id
		w.set.add(id)
		if n++; n&255 == 0 {
			w.n.Store(n)
		}
	}
	w.n.Store(n)
}

func run(ctx context.Context, cfg client.Config, tag string, unordered bool, g int, warmup, d time.Duration) (*report, error) {
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	// One ID before the clock: the tag is known and its first batch is
	// there, so a wrong URL or tag fails here, not as a slow run.
	first, err := c.Next(ctx, tag)
	if err != nil {
		return nil, fmt.Errorf("first ID of %s: %w", tag, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var stop atomic.Bool
	var wg sync.WaitGroup
	workers := make([]*worker, g)
	for i := range workers {
		workers[i] = new(worker)
		wg.Go(func() { workers[i].run(runCtx, c, tag, unordered, &stop) })
	}
	count := func() (n int64) {
		for _, w := range workers {
			n += w.n.Load()
		}
		return n
	}
	wait := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	ok := wait(warmup)
	n0, t0 := count(), time.Now()
	ok = ok && wait(d)
	n1, t1 := count(), time.Now()
	stop.Store(true)
	cancel()
	wg.Wait()
	if !ok {
		return nil, ctx.Err()
	}
	rep := &report{
		URLs: cfg.URLs, Tag: tag, Goroutines: g, GOMAXPROCS: runtime.GOMAXPROCS(0),
		MaxBatch: cfg.MaxBatch, MaxRange: cfg.MaxRange, Unordered: unordered, GoVersion: runtime.Version(), WarmupS: warmup.Seconds(),
		ElapsedS: t1.Sub(t0).Seconds(), IDs: n1 - n0,
	}
	if rep.MaxBatch == 0 {
		rep.MaxBatch = client.DefaultMaxBatch
	}
	if rep.MaxRange == 0 {
		rep.MaxRange = client.DefaultMaxRange
	}
	rep.IDsPerS = float64(rep.IDs) / rep.ElapsedS
	sets := []*idSet{{}}
	sets[0].add(first)
	for _, w := range workers {
		if w.err != nil {
			return nil, fmt.Errorf("Next(%s): %w", tag, w.err)
		}
		rep.OrderViolations += w.order
		rep.TotalIDs += w.set.ids
		sets = append(sets, &w.set)
	}
	rep.IDsChecked = rep.TotalIDs + 1
	rep.Duplicates, _ = merge(sets)
	// With several instances a goroutine's IDs come from several
	// sequences: only a duplicate fails the run then.
	rep.Pass = rep.Duplicates == 0 && (rep.OrderViolations == 0 || len(cfg.URLs) > 1)
	return rep, nil
}
