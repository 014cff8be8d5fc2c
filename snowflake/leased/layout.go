package leased

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

// LayoutRecorder is what a holder of snowflake leases needs of its lease
// store to keep one layout per cluster: every lease store of this module
// (store, redislease, etcdlease) has it. It is this package's, not part of
// workerlease.Store: leases know no generator.
type LayoutRecorder interface {
	// CheckLayout records cluster's layout (its epoch in Unix milliseconds
	// and its worker bits, as snowflake.Layout.RecordedWorkerBits gives them) when none is
	// recorded, and refuses another with
	// an error wrapping snowflake.ErrLayoutMismatch. Any other error is a
	// fault (the store unreachable; a table missing, named with its fix),
	// which leaves the layout unknown, not refused.
	CheckLayout(ctx context.Context, cluster string, epochMS int64, workerBits int) error
}

func checkLayout(ctx context.Context, rec LayoutRecorder, cluster string, l snowflake.Layout) error {
	return rec.CheckLayout(ctx, cluster, l.Epoch.UnixMilli(), l.RecordedWorkerBits())
}

// CheckEachLease returns the check a Keeper makes after each grant
// (workerlease.SessionConfig.CheckLayout) for IDs of layout: rec checks it
// in the lease's cluster. A store that forgot its leases forgot the
// cluster's layout with them, and the first holder after that records its
// own; a holder of another layout learns of it at its next grant, which it
// gives back, and its Keeper retries. A mismatch is logged at Error on log
// (nil means no logging): no ID is issued under this layout until an
// operator decides.
func CheckEachLease(rec LayoutRecorder, layout snowflake.Layout, log *slog.Logger) func(ctx context.Context, cluster string) error {
	return func(ctx context.Context, cluster string) error {
		err := checkLayout(ctx, rec, cluster, layout)
		if errors.Is(err, snowflake.ErrLayoutMismatch) && log != nil {
			log.Error("worker lease refused: the cluster now records another snowflake layout", "err", err)
		}
		return err
	}
}

// Defaults of LayoutGate.
const (
	layoutCheckTimeout = 5 * time.Second  // bound of one attempt
	layoutRetryMin     = time.Second      // first wait between attempts
	layoutRetryMax     = 10 * time.Second // cap of the doubling wait
)

// LayoutGate holds an instance's worker leases back until its snowflake
// layout (epoch, worker bits) is confirmed against the one its cluster
// recorded. Instances of one cluster with different layouts can compose
// the same ID, so no lease is taken, and no ID issued (a Source without a
// session answers snowflake.ErrFenced), until a check has given a definite
// answer: the same layout, or a mismatch, which stops the instance.
// Anything else (the store unreachable, its layout table missing) is
// retried with backoff for as long as the instance runs. Zero durations
// mean the defaults.
type LayoutGate struct {
	// Layouts is the lease store, where the cluster's layout is recorded;
	// required.
	Layouts LayoutRecorder
	// Cluster is the cluster the instance leases its worker IDs in.
	Cluster string
	// Layout is the instance's; required.
	Layout snowflake.Layout
	// Logger is told of a failed first attempt and of the check that
	// ends the retrying; nil means no logging.
	Logger *slog.Logger
	// Timeout bounds one attempt; 0 means 5s.
	Timeout time.Duration
	// RetryInterval is the first wait between attempts, doubled after each
	// up to MaxRetryInterval; 0 means 1s and 10s. Each wait is jittered.
	RetryInterval, MaxRetryInterval time.Duration

	// randN returns a random duration in [0, n); rand.N unless a test
	// fixes it.
	randN func(n time.Duration) time.Duration
}

// Open makes one attempt at once. Confirmed: it calls start and returns.
// A mismatch: it returns the error (wrapping snowflake.ErrLayoutMismatch),
// and the instance should not start. Anything else: it logs the error,
// which names the fix when retrying alone will not cure it, and retries in
// the background, where a confirmation calls start and a mismatch calls
// fatal. The stop function returned ends the retrying and waits for it;
// call it before closing the lease store. Open returns ctx's error when
// ctx ends during the first attempt, and an error without trying when
// Layouts is nil, Layout zero, or a duration negative.
func (g LayoutGate) Open(ctx context.Context, start func(), fatal func(error)) (stop func(), err error) {
	if err := g.resolve(); err != nil {
		return nil, err
	}
	err = g.attempt(ctx)
	switch {
	case err == nil:
		start()
		return func() {}, nil
	case errors.Is(err, snowflake.ErrLayoutMismatch), ctx.Err() != nil:
		return nil, err
	}
	g.Logger.Error("snowflake layout not checked: no worker lease is taken until it is; retrying in the background",
		"cluster", g.Cluster, "err", err)

	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		switch err := g.retry(ctx); {
		case err == nil:
			g.Logger.Info("snowflake layout checked; taking a worker lease", "cluster", g.Cluster)
			start()
		case errors.Is(err, snowflake.ErrLayoutMismatch):
			fatal(err)
		}
	}()
	return func() { cancel(); <-done }, nil
}

// resolve checks g and applies the defaults.
func (g *LayoutGate) resolve() error {
	switch {
	case g.Layouts == nil:
		return errors.New("layout gate: no LayoutRecorder")
	case g.Layout == (snowflake.Layout{}):
		return errors.New("layout gate: no layout")
	case g.Timeout < 0 || g.RetryInterval < 0 || g.MaxRetryInterval < 0:
		return errors.New("layout gate: negative duration")
	}
	if g.Logger == nil {
		g.Logger = slog.New(slog.DiscardHandler)
	}
	if g.Timeout == 0 {
		g.Timeout = layoutCheckTimeout
	}
	if g.RetryInterval == 0 {
		g.RetryInterval = layoutRetryMin
	}
	if g.MaxRetryInterval == 0 {
		g.MaxRetryInterval = max(layoutRetryMax, g.RetryInterval)
	}
	if g.randN == nil {
		g.randN = rand.N[time.Duration]
	}
	return nil
}

// retry attempts until one gives a definite answer (nil, or an error
// wrapping snowflake.ErrLayoutMismatch) and returns it, or returns ctx's
// error when ctx ends first.
func (g LayoutGate) retry(ctx context.Context) error {
	wait := g.RetryInterval
	for {
		// Equal jitter (half the wait fixed, half random): instances that
		// lost the store together do not come back to it in lockstep.
		t := time.NewTimer(wait/2 + g.randN(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		err := g.attempt(ctx)
		if err == nil || errors.Is(err, snowflake.ErrLayoutMismatch) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait = min(2*wait, g.MaxRetryInterval)
	}
}

func (g LayoutGate) attempt(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, g.Timeout)
	defer cancel()
	return checkLayout(ctx, g.Layouts, g.Cluster, g.Layout)
}
