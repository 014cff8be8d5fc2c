package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// errLostRace: another writer changed the row between our read and our
// compare-and-set, so the statement matched nothing; the operation reads
// again.
var errLostRace = errors.New("lost the race for the row")

// Bounds of the at-once retries of a lost race. Twelve fetchers on one row
// of a three-node Galera cluster lose about five races per range won, so 32
// tries leave a wide margin. The pauses are random, up to 1ms after the
// first loss and doubling to 16ms: they break the lockstep of losers that
// would otherwise read and write again together, and a row that stays hot
// spreads its writers out instead of failing them.
const (
	raceTries     = 32
	racePauseBase = time.Millisecond
	racePauseMax  = 16 * time.Millisecond
)

// ObserveConflicts makes fn be called once per lost race, with the operation
// ("fetch", "fetch_period", "acquire", "renew", "layout", "carry",
// "advance", "create": a bulk create's chunk), so they can be counted.
// fn must be cheap and safe for concurrent use. nil stops the calls.
func (d *db) ObserveConflicts(fn func(op string)) { d.onConflict.Store(&fn) }

// lostRace reports an error that means a concurrent writer won: a
// compare-and-set that matched nothing, or the database's own verdict
// (a duplicate key, a deadlock victim, a lock wait timeout, a multi-primary
// certification failure).
func (d *db) lostRace(err error) bool {
	return errors.Is(err, errLostRace) || d.dialect.isLostRace(err)
}

// retryRaces runs try until it ends in something other than a lost race, at
// most raceTries times, with a short random pause between tries. A lost race
// is not a fault of the store, so it gets none of the backoff a fault gets;
// a store so contended that every try loses is reported as a fault.
func (d *db) retryRaces(ctx context.Context, op string, try func() error) error {
	for n := 1; ; n++ {
		err := try()
		if err == nil || !d.lostRace(err) {
			return err
		}
		if fn := d.onConflict.Load(); fn != nil && *fn != nil {
			(*fn)(op)
		}
		if n == raceTries {
			return fmt.Errorf("%d lost races in a row: %w", n, err)
		}
		t := time.NewTimer(rand.N(min(racePauseBase<<(n-1), racePauseMax)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		}
	}
}
