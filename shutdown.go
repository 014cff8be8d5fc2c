package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"syscall"
	"time"
)

// stopWatchdogSlack is how long past shutdown_timeout the watchdog lets a stop
// run before it ends the process: time for the last hand-back call to return
// its deadline error and for the store to close.
const stopWatchdogSlack = time.Second

// errStopSignal is the cause of a stop asked for by SIGINT or SIGTERM, the
// one stop that ends with exit status 0.
var errStopSignal = errors.New("stop signal")

// watchStop turns signals into the stop. The first SIGINT or SIGTERM cancels
// ctx with errStopSignal, which starts the drain. Once ctx is done, for that
// or any other reason, exit is called with the next signal, or when the stop
// has outlasted timeout by stopWatchdogSlack (a store call that ignores its
// deadline would otherwise hold the process past the orchestrator's grace
// period, into SIGKILL, with nothing logged).
//
// A second signal exits at once, skipping what is left of the stop. That is
// safe by construction: nothing is served before the store has recorded it
// as taken (a segment range after its max_id compare-and-set committed, a
// snowflake timestamp after a lease renewal reserved it), so exiting early
// loses only what the stop would have handed back: the unused rest of the
// segments, a gap in the sequence, and the worker ID, which the lease's TTL
// frees by the store's clock. That is what kill -9 does, and guarantee 1
// holds across kill -9.
func watchStop(ctx context.Context, cancel context.CancelCauseFunc, sigs <-chan os.Signal, timeout time.Duration, exit func(code int), log *slog.Logger) {
	select {
	case sig := <-sigs:
		log.Info("stopping", "signal", sig.String(), "shutdown_timeout", timeout)
		cancel(errStopSignal)
	case <-ctx.Done():
	}
	t := time.NewTimer(timeout + stopWatchdogSlack)
	defer t.Stop()
	select {
	case sig := <-sigs:
		log.Warn("second signal: exiting now; unused IDs are not given back and the worker lease expires by its TTL",
			"signal", sig.String())
		exit(exitCode(sig))
	case <-t.C:
		log.Error("stop outlasted shutdown_timeout: exiting now", "shutdown_timeout", timeout)
		exit(1)
	}
}

// exitCode is the shell's status for a process ended by sig: 128 + its number.
func exitCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 1
}

// stopper is the stop sequence, bounded as a whole by timeout from the moment
// it began (the signal):
//
//  1. The server, whose Serve saw the same signal, drains for drain, then
//     shuts HTTP down; it reports on served. It gets until half of what is
//     left after the drain; connections still open then are cut (cutConns),
//     which ends the shutdown.
//  2. The hand-back (releasing the worker lease, giving unused segment IDs
//     back) runs at once after, its parts side by side: they touch different
//     rows, and a store that hangs on one must not starve the other. They
//     share a context ending at the overall deadline.
//
// With the defaults (5 s drain, 25 s timeout): drain until 5 s, HTTP shutdown
// until 15 s, hand-back until 25 s at most. The hand-back starts as soon as
// HTTP is down, so in the usual case it has 20 s and needs milliseconds.
type stopper struct {
	timeout  time.Duration
	drain    time.Duration
	served   <-chan error
	cutConns func()
	handBack []func(context.Context) error
	log      *slog.Logger
}

// run runs the sequence that began at begun. It returns Serve's error and the
// hand-back's. It returns by the deadline provided every hand-back function
// honours its context.
func (s stopper) run(begun time.Time) (serveErr, handBackErr error) {
	deadline := begun.Add(s.timeout)
	cut := time.NewTimer(time.Until(begun.Add(s.drain + (s.timeout-s.drain)/2)))
	defer cut.Stop()
	served := false
	select {
	case serveErr = <-s.served:
		served = true
	case <-cut.C:
		s.log.Warn("shutdown: HTTP connections still open at their share of shutdown_timeout; closing them")
		s.cutConns()
	}

	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	results := make(chan error, len(s.handBack))
	for _, f := range s.handBack {
		go func() { results <- f(ctx) }()
	}
	errs := make([]error, 0, len(s.handBack))
	for range s.handBack {
		errs = append(errs, <-results)
	}
	if !served {
		// Cut connections end Serve at once unless a handler is stuck; the
		// hand-back above no longer needs it to have returned.
		select {
		case serveErr = <-s.served:
		case <-ctx.Done():
			s.log.Warn("shutdown: HTTP server still busy at shutdown_timeout")
		}
	}
	return serveErr, errors.Join(errs...)
}
