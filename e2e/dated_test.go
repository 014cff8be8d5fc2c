package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// datedRun is how long TestDatedMinutesTwoInstances loads its minute tag:
// 150 s crosses at least two minute boundaries, three as a rule. Set
// IDALLOC_TEST_DATED_SECONDS to shorten it by hand.
func datedRun() time.Duration {
	if s, err := strconv.Atoi(os.Getenv("IDALLOC_TEST_DATED_SECONDS")); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 150 * time.Second
}

// datedID is one dated ID with when its request was sent and its answer
// received, by the test's clock (the instances', on the same machine).
type datedID struct {
	id         int64
	sent, recv time.Time
	inst       string
}

// TestDatedMinutesTwoInstances (docs/api.md §11): two instances on one MariaDB
// database serve a dated tag of period minute (numeric: stamp yyyyMMddHHmm
// and 6 digits of sequence, step 50) to clients over HTTP and over RESP on
// both, for 150 s; in the middle one instance is killed -9 and started
// again. Every ID is checked: none twice; each one's stamp is the minute,
// in UTC, in which it was issued: between its request's sending and its
// answer's receipt, ± dated.max_clock_skew (1 s); and every whole minute
// without a kill in it begins at the sequence's start, 1. The kill comes
// after the first whole minute, so there is always one to check.
func TestDatedMinutesTwoInstances(t *testing.T) {
	env := setup(t)
	dsn := env.db.newDatabase(t)
	const tag = "minute_e2e"
	var insts []*instance
	var respAddrs []string
	for _, name := range []string{"a", "b"} {
		addr := loopbackAddr(t)
		respAddrs = append(respAddrs, addr)
		insts = append(insts, newInstance(t, env, name, dsn, config(map[string]any{"resp_addr": addr})))
	}
	if err := insts[0].start(true); err != nil {
		t.Fatal(err)
	}
	r, err := insts[0].ctl.post("/tags", fmt.Sprintf(`{"app_tag":%q,"format":"dated","period":"minute","length":6,"step":50}`, tag))
	if err != nil || r.HTTPStatus != 201 {
		t.Fatalf("POST /tags: %+v, %v", r, err)
	}
	if err := insts[1].start(false); err != nil {
		t.Fatal(err)
	}

	run := datedRun()
	ctx, cancel := context.WithTimeout(t.Context(), run+time.Minute)
	defer cancel()
	stop := make(chan struct{})
	var mu sync.Mutex
	var got []datedID
	var httpN, respN, failed int
	keep := func(d datedID, viaRESP bool) {
		mu.Lock()
		got = append(got, d)
		if viaRESP {
			respN++
		} else {
			httpN++
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for i, in := range insts {
		for range 2 {
			wg.Go(func() {
				c := newClient(in.url, 5*time.Second)
				defer c.close()
				for {
					select {
					case <-stop:
						return
					default:
					}
					sent := time.Now()
					r, err := c.get("/alloc?app_tag=" + tag)
					if err != nil || r.HTTPStatus != 200 {
						mu.Lock()
						failed++
						mu.Unlock()
						time.Sleep(20 * time.Millisecond)
						continue
					}
					keep(datedID{r.ID, sent, time.Now(), in.name}, false)
				}
			})
		}
		wg.Go(func() {
			rc := redis.NewClient(&redis.Options{Addr: respAddrs[i], MaxRetries: -1})
			defer rc.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent := time.Now()
				s, err := rc.Get(ctx, tag).Result()
				id, perr := strconv.ParseInt(s, 10, 64)
				if err != nil || perr != nil {
					mu.Lock()
					failed++
					mu.Unlock()
					time.Sleep(20 * time.Millisecond)
					continue
				}
				keep(datedID{id, sent, time.Now(), in.name}, true)
			}
		})
	}

	// The kill comes 10 s into the second minute boundary after the start:
	// the minute between the first two boundaries is whole and untouched
	// by it, and 150 s leave at least 20 s after it.
	began := time.Now()
	time.Sleep(time.Until(began.Truncate(time.Minute).Add(2*time.Minute + 10*time.Second)))
	killedAt := time.Now()
	if err := insts[1].kill9(); err != nil {
		t.Fatal(err)
	}
	if err := insts[1].start(false); err != nil {
		t.Fatal(err)
	}
	restartedAt := time.Now()
	time.Sleep(time.Until(began.Add(run)))
	close(stop)
	wg.Wait()

	const skew = time.Second
	seen := make(map[int64]bool, len(got))
	dups, offMinute := 0, 0
	firstSeq := map[int64]int64{} // per stamp, the lowest sequence seen
	var examples []string
	for _, d := range got {
		if seen[d.id] {
			dups++
			continue
		}
		seen[d.id] = true
		stamp, seq := d.id/1_000_000, d.id%1_000_000
		if lo, ok := firstSeq[stamp]; !ok || seq < lo {
			firstSeq[stamp] = seq
		}
		early, late := minuteStamp(d.sent.Add(-skew)), minuteStamp(d.recv.Add(skew))
		if stamp < early || stamp > late {
			offMinute++
			if len(examples) < 5 {
				examples = append(examples, fmt.Sprintf("%d from %s sent %s received %s", d.id, d.inst,
					d.sent.UTC().Format("15:04:05.000"), d.recv.UTC().Format("15:04:05.000")))
			}
		}
	}
	// Whole minutes: after the first and before the last seen, none of
	// which the kill touched.
	whole, startsAt1 := 0, 0
	first, last := minuteStamp(got[0].recv), minuteStamp(got[len(got)-1].recv)
	var notAt1 []string
	for stamp, lo := range firstSeq {
		if stamp <= first || stamp >= last || (stamp >= minuteStamp(killedAt) && stamp <= minuteStamp(restartedAt)) {
			continue
		}
		whole++
		if lo == 1 {
			startsAt1++
		} else {
			notAt1 = append(notAt1, fmt.Sprintf("%d from %d", stamp, lo))
		}
	}
	t.Logf("dated minutes: %d IDs in %s over %d minutes (%d whole ones without the kill), HTTP %d, RESP %d; %d failed requests (b killed -9 and back in %s)",
		len(got), run, len(firstSeq), whole, httpN, respN, failed, ms(restartedAt.Sub(killedAt)))
	t.Logf("dated minutes: %d duplicates; %d IDs whose stamp is not the minute they were issued in ± %s; %d of %d whole minutes start at 1",
		dups, offMinute, skew, startsAt1, whole)
	if dups > 0 {
		t.Errorf("%d duplicate IDs", dups)
	}
	if offMinute > 0 {
		t.Errorf("%d IDs stamped outside the minute of their request ± %s, e.g. %v", offMinute, skew, examples)
	}
	if len(notAt1) > 0 {
		t.Errorf("whole minutes whose lowest sequence is not 1: %v", notAt1)
	}
	if whole == 0 && run >= 150*time.Second {
		t.Errorf("no whole minute without the kill in %s: the test shows no boundary", run)
	}
	if httpN == 0 || respN == 0 {
		t.Error(errors.New("no ID over one of HTTP and RESP"))
	}
}

// minuteStamp is t's minute in UTC as a dated stamp, yyyyMMddHHmm.
func minuteStamp(t time.Time) int64 {
	u := t.UTC()
	return int64(u.Year())*100_000_000 + int64(u.Month())*1_000_000 + int64(u.Day())*10_000 +
		int64(u.Hour())*100 + int64(u.Minute())
}
