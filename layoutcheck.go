package main

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/idalloc/idalloc/workerlease"
)

// Defaults of layoutCheck.
const (
	layoutCheckTimeout = 5 * time.Second  // bound of one attempt
	layoutRetryMin     = time.Second      // first wait between attempts
	layoutRetryMax     = 10 * time.Second // cap of the doubling wait
)

// erNoSuchTable is MySQL's error for a table that does not exist.
const erNoSuchTable = 1146

// layoutCheck confirms this instance's snowflake layout (epoch, worker bits)
// against the one its cluster recorded in worker_layouts. Instances of one
// cluster with different layouts can compose the same ID, so the keeper takes
// no worker lease, and /snowflake serves nothing (503, resp_code 3: the
// Source's answer while no lease is held), until a check has given a definite
// answer: the same layout, or a mismatch, which stops the instance. Anything
// else (the store unreachable, worker_layouts missing) is retried with
// backoff for as long as the instance runs.
type layoutCheck struct {
	check func(context.Context) error
	log   *slog.Logger
	// timeout bounds one attempt; minWait doubles up to maxWait between
	// attempts, each wait jittered.
	timeout, minWait, maxWait time.Duration
	// randN returns a random duration in [0, n); rand.N, or a fixed choice
	// in tests.
	randN func(n time.Duration) time.Duration
}

func newLayoutCheck(check func(context.Context) error, log *slog.Logger) *layoutCheck {
	return &layoutCheck{
		check: check, log: log,
		timeout: layoutCheckTimeout, minWait: layoutRetryMin, maxWait: layoutRetryMax,
		randN: rand.N[time.Duration],
	}
}

// gate makes one attempt at once. Checked: it calls start and returns. A
// mismatch: it returns the error (the instance does not start, as before it
// serves). Anything else: it says so, naming worker_layouts when the table
// is missing, and retries in the background, where success calls start and a
// mismatch calls fatal. The stop function returned ends the retrying and
// waits for it; call it before closing what check uses.
func (lc *layoutCheck) gate(ctx context.Context, start func(), fatal func(error)) (stop func(), err error) {
	err = lc.attempt(ctx)
	switch {
	case err == nil:
		start()
		return func() {}, nil
	case errors.Is(err, workerlease.ErrLayoutMismatch), ctx.Err() != nil:
		return nil, err
	}
	args := []any{"err", err}
	if hint := layoutHint(err); hint != "" {
		args = append(args, "fix", hint)
	}
	lc.log.Error("snowflake layout not checked: /snowflake answers 503 until it is; retrying in the background", args...)

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		switch err := lc.retry(ctx); {
		case err == nil:
			lc.log.Info("snowflake layout checked; taking a worker lease")
			start()
		case errors.Is(err, workerlease.ErrLayoutMismatch):
			fatal(err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// retry attempts until one gives a definite answer (nil, or an error wrapping
// workerlease.ErrLayoutMismatch) and returns it, or returns ctx's error when
// ctx ends first.
func (lc *layoutCheck) retry(ctx context.Context) error {
	wait := lc.minWait
	for {
		// Equal jitter (half the wait fixed, half random): instances that
		// lost the store together do not come back to it in lockstep.
		t := time.NewTimer(wait/2 + lc.randN(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err := lc.attempt(ctx)
		if err == nil || errors.Is(err, workerlease.ErrLayoutMismatch) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait = min(2*wait, lc.maxWait)
	}
}

func (lc *layoutCheck) attempt(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, lc.timeout)
	defer cancel()
	return lc.check(ctx)
}

// layoutHint says how to fix a layout check error that retrying alone will
// not cure, or "" when there is no such advice.
func layoutHint(err error) string {
	if me, ok := errors.AsType[*mysql.MySQLError](err); ok && me.Number == erNoSuchTable {
		return "table worker_layouts is missing: apply schema.sql, or start idalloc once with -init-schema"
	}
	return ""
}
