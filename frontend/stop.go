package frontend

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// stopWatchdogSlack is how long past the stop's timeout the watchdog lets
// a stop run before it ends the process: time for the last hand-back call
// to return its deadline error and for the stores to close.
const stopWatchdogSlack = time.Second

// ErrStopSignal is the cause of a stop asked for by SIGINT or SIGTERM, the
// one stop that ends with exit status 0.
var ErrStopSignal = errors.New("stop signal")

// WatchSignals turns SIGINT and SIGTERM into the stop (see watch, with
// os.Exit) until the returned function is called.
func WatchSignals(ctx context.Context, cancel context.CancelCauseFunc, timeout time.Duration, log *slog.Logger) (stop func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go watch(ctx, cancel, sigs, timeout, os.Exit, log)
	return func() { signal.Stop(sigs) }
}

// watch turns signals into the stop. The first SIGINT or SIGTERM cancels
// ctx with ErrStopSignal, which starts the drain. Once ctx is done, for
// that or any other reason, exit is called with the next signal, or when
// the stop has outlasted timeout by stopWatchdogSlack (a store call that
// ignores its deadline would otherwise hold the process past the
// orchestrator's grace period, into SIGKILL, with nothing logged).
//
// A second signal exits at once, skipping what is left of the stop: the
// hand-back. What that costs is the caller's to make safe; for idalloc it
// is what kill -9 costs (see main).
func watch(ctx context.Context, cancel context.CancelCauseFunc, sigs <-chan os.Signal, timeout time.Duration, exit func(code int), log *slog.Logger) {
	select {
	case sig := <-sigs:
		log.Info("stopping", "signal", sig.String(), "shutdown_timeout", timeout)
		cancel(ErrStopSignal)
	case <-ctx.Done():
	}
	t := time.NewTimer(timeout + stopWatchdogSlack)
	defer t.Stop()
	select {
	case sig := <-sigs:
		log.Warn("second signal: exiting now, without handing back what this instance holds", "signal", sig.String())
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

// Stop is the stop sequence, bounded as a whole by Timeout from the moment
// it began (the signal):
//
//  1. The front ends, whose Serve saw the same signal, drain for Drain,
//     then shut down; they report on Served (Serving.Done). They get until
//     half of what is left after the drain; connections still open then
//     are cut (Cut), which ends the shutdown.
//  2. The hand-back runs at once after, its parts side by side: in idalloc
//     they touch different rows (the worker lease, the unused segment
//     IDs), and a store that hangs on one must not starve the other. They
//     share a context ending at the overall deadline.
//
// With idalloc's defaults (5 s drain, 25 s timeout): drain until 5 s,
// shutdown until 15 s, hand-back until 25 s at most. The hand-back starts
// as soon as the front ends are down, so in the usual case it has 20 s
// and needs milliseconds.
type Stop struct {
	Timeout  time.Duration
	Drain    time.Duration
	Served   <-chan error
	Cut      func()
	HandBack []func(context.Context) error
	Log      *slog.Logger
}

// Run runs the sequence that began at begun. It returns the front ends'
// error and the hand-back's. It returns by the deadline provided every
// hand-back function honours its context.
func (s Stop) Run(begun time.Time) (serveErr, handBackErr error) {
	deadline := begun.Add(s.Timeout)
	cut := time.NewTimer(time.Until(begun.Add(s.Drain + (s.Timeout-s.Drain)/2)))
	defer cut.Stop()
	served := false
	select {
	case serveErr = <-s.Served:
		served = true
	case <-cut.C:
		s.Log.Warn("shutdown: connections still open at their share of shutdown_timeout; closing them")
		s.Cut()
	}

	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	results := make(chan error, len(s.HandBack))
	for _, f := range s.HandBack {
		go func() { results <- f(ctx) }()
	}
	errs := make([]error, 0, len(s.HandBack))
	for range s.HandBack {
		errs = append(errs, <-results)
	}
	if !served {
		// Cut connections end Serve at once unless a handler is stuck; the
		// hand-back above no longer needs it to have returned.
		select {
		case serveErr = <-s.Served:
		case <-ctx.Done():
			s.Log.Warn("shutdown: a front end still busy at shutdown_timeout")
		}
	}
	return serveErr, errors.Join(errs...)
}
