package e2e

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/pgtest"
)

// pgStep is the step of the failover tests' tag, with segment.max_step equal
// to it: small, so that every instance fetches several times a second and a
// failover meets fetches in flight.
const pgStep = 10

// pgInstances starts three instances (a, b, c) on dsn with the postgres
// driver: a first, with -init-schema, which creates tag with step pgStep,
// then b and c together, which find the tag at their start.
func pgInstances(t *testing.T, env *suiteEnv, dsn, tag string) []*instance {
	t.Helper()
	cfg := config(map[string]any{"segment": map[string]any{"max_step": pgStep}})
	var insts []*instance
	for _, name := range []string{"a", "b", "c"} {
		in := newInstance(t, env, name, dsn, cfg)
		in.driver = "postgres"
		insts = append(insts, in)
	}
	if err := insts[0].start(true); err != nil {
		t.Fatal(err)
	}
	insts[0].createTag(t, tag, pgStep)
	startTogether(t, insts[1:])
	return insts
}

// TestPostgresThreeInstancesNoDuplicates: the Galera test's load on one
// PostgreSQL database: three instances, one tag of step 10 (segment.max_step
// 10, so the three collide on its row all the time), 8 clients each for
// 15 s. No ID may be issued twice, every instance must serve, and each
// client's IDs must strictly increase.
func TestPostgresThreeInstancesNoDuplicates(t *testing.T) {
	env := setup(t)
	p := pgtest.Start(t)
	p.Exec(t, "CREATE DATABASE idalloc")
	const (
		tag    = "pg_three"
		runFor = 15 * time.Second
	)
	insts := pgInstances(t, env, p.DSN("idalloc"), tag)

	ctx, cancel := context.WithTimeout(t.Context(), runFor+30*time.Second)
	defer cancel()
	issued := []*atomic.Int64{{}, {}, {}}
	began := time.Now()
	wait := loadTag(ctx, insts, 8, tag, issued)
	defer wait()
	select {
	case <-time.After(runFor):
	case <-ctx.Done():
	}
	s := summarize(wait())
	elapsed := time.Since(began)
	t.Logf("postgres: %d IDs in %s (%.0f IDs/s) from 3 instances × 8 clients (a=%d b=%d c=%d); %d duplicates",
		len(s.ids), elapsed.Round(time.Millisecond), float64(len(s.ids))/elapsed.Seconds(), s.perInst["a"], s.perInst["b"], s.perInst["c"], s.dups)
	t.Logf("postgres: 503 answers a=%d b=%d c=%d; transport errors %d; other failures %d; %s; %s; %s",
		s.unavailable["a"], s.unavailable["b"], s.unavailable["c"], sum(s.transport), s.other,
		storeFigures(insts[0]), storeFigures(insts[1]), storeFigures(insts[2]))
	if s.dups > 0 {
		t.Errorf("%d duplicate IDs among %d, e.g. %v", s.dups, len(s.ids), s.dupExamples)
	}
	for _, in := range insts {
		if s.perInst[in.name] == 0 {
			t.Errorf("instance %s served no ID", in.name)
		}
	}
	if len(s.violations) > 0 {
		t.Errorf("IDs not strictly increasing per client: %v", s.violations)
	}
	if s.other > 0 {
		t.Errorf("%d unexpected failures, first: %s", s.other, s.firstOther)
	}
}

// grown waits up to limit until every counter has grown by want from now.
func grown(ctx context.Context, issued []*atomic.Int64, want int64, limit time.Duration) bool {
	base := counts(issued)
	wctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	return waitFor(wctx, func() bool {
		for i, n := range issued {
			if n.Load() < base[i]+want {
				return false
			}
		}
		return true
	})
}

func counts(issued []*atomic.Int64) []int64 {
	s := make([]int64, len(issued))
	for i, n := range issued {
		s[i] = n.Load()
	}
	return s
}

// watchGaps samples the counters every 5 ms from now until the returned
// function is called, which returns, per counter, the longest time it did
// not grow: the stall its instance's callers saw.
func watchGaps(issued []*atomic.Int64) func() []time.Duration {
	stop := make(chan struct{})
	longest := make([]time.Duration, len(issued))
	var wg sync.WaitGroup
	wg.Go(func() {
		last := counts(issued)
		since := make([]time.Time, len(issued))
		for i := range since {
			since[i] = time.Now()
		}
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-tick.C:
				for i, n := range issued {
					if v := n.Load(); v != last[i] {
						last[i], since[i] = v, now
					}
					longest[i] = max(longest[i], now.Sub(since[i]))
				}
			}
		}
	})
	return sync.OnceValue(func() []time.Duration {
		close(stop)
		wg.Wait()
		return longest
	})
}
