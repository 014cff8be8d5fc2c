package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// loadWorker is one client goroutine of a load test: one keep-alive
// connection to one instance, one request path asked one after another.
type loadWorker struct {
	inst *instance
	c    getter
	path string // /alloc?app_tag=T, with &count=N for batches

	ids []int64
	// byGen is, per incarnation of inst, the range of the IDs this worker
	// got from it (only replies whose incarnation is certain).
	byGen map[int64]*idRange
	// runs counts the sequences checked for strict increase (one per
	// incarnation met); violations describes the IDs that broke one.
	runs       int
	violations []string
	ambiguous  int // replies during a restart: incarnation unknown

	transportErrs int
	unavailable   int // resp_code 3
	other         int // any other failure
	firstOther    string
}

type idRange struct {
	min, max int64
	n        int
}

func (r *idRange) add(id int64) {
	if r.n == 0 || id < r.min {
		r.min = id
	}
	if r.n == 0 || id > r.max {
		r.max = id
	}
	r.n++
}

func (r *idRange) merge(o *idRange) {
	if o == nil || o.n == 0 {
		return
	}
	if r.n == 0 || o.min < r.min {
		r.min = o.min
	}
	if r.n == 0 || o.max > r.max {
		r.max = o.max
	}
	r.n += o.n
}

// atomicMax raises m to v.
func atomicMax(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// run requests w.path until stop or ctx ends. A reply belongs to
// incarnation g when inst.gen read g both before and after it; the IDs of
// one worker from one incarnation, a batch's included, must strictly
// increase. issued counts IDs, not requests.
func (w *loadWorker) run(ctx context.Context, stop <-chan struct{}, issued, globalMax *atomic.Int64) {
	w.byGen = map[int64]*idRange{}
	curGen, last := int64(-1), int64(0)
	pause := func() {
		select {
		case <-time.After(10 * time.Millisecond):
		case <-stop:
		case <-ctx.Done():
		}
	}
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		g0 := w.inst.gen.Load()
		r, err := w.c.get(w.path)
		g1 := w.inst.gen.Load()
		switch {
		case err != nil:
			w.transportErrs++
			pause()
			continue
		case r.RespCode == 3 && r.HTTPStatus == http.StatusServiceUnavailable:
			w.unavailable++
			pause()
			continue
		case r.RespCode != 0 || r.HTTPStatus != http.StatusOK:
			w.other++
			if w.firstOther == "" {
				w.firstOther = fmt.Sprintf("HTTP %d resp_code %d %q", r.HTTPStatus, r.RespCode, r.Msg)
			}
			pause()
			continue
		}
		got := r.IDs
		if len(got) == 0 {
			got = []int64{r.ID}
		}
		w.ids = append(w.ids, got...)
		issued.Add(int64(len(got)))
		atomicMax(globalMax, slices.Max(got))
		if g0 != g1 {
			w.ambiguous++
			continue
		}
		if g0 != curGen {
			curGen, last = g0, 0
			w.runs++
		}
		rg := w.byGen[g0]
		if rg == nil {
			rg = &idRange{}
			w.byGen[g0] = rg
		}
		for _, id := range got {
			if id <= last && len(w.violations) < 5 {
				w.violations = append(w.violations, fmt.Sprintf("%s incarnation %d: id %d after %d", w.inst.name, g0, id, last))
			}
			last = id
			rg.add(id)
		}
	}
}

// waitFor polls cond every 10ms until it holds or ctx ends.
func waitFor(ctx context.Context, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// startLoad starts one keep-alive client per path on every instance, which
// run until wait is called or ctx ends; issued[i] counts the IDs insts[i]
// handed out. wait stops them and returns them, instance by instance and
// path by path in the order given.
func startLoad(ctx context.Context, insts []*instance, paths []string, issued []*atomic.Int64) (wait func() []*loadWorker) {
	var globalMax atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var workers []*loadWorker
	for i, in := range insts {
		for _, path := range paths {
			w := &loadWorker{inst: in, c: newRawClient(in.addr, 10*time.Second), path: path}
			workers = append(workers, w)
			wg.Go(func() {
				defer w.c.close()
				w.run(ctx, stop, issued[i], &globalMax)
			})
		}
	}
	return sync.OnceValue(func() []*loadWorker {
		close(stop)
		wg.Wait()
		return workers
	})
}

// loadTag is startLoad with perInstance clients of /alloc?app_tag=tag on
// every instance.
func loadTag(ctx context.Context, insts []*instance, perInstance int, tag string, issued []*atomic.Int64) (wait func() []*loadWorker) {
	return startLoad(ctx, insts, slices.Repeat([]string{"/alloc?app_tag=" + tag}, perInstance), issued)
}

// loadSummary is what the workers of a load saw, per instance and in all.
type loadSummary struct {
	ids                    []int64
	perInst                map[string]int
	unavailable, transport map[string]int
	other                  int
	firstOther             string
	violations             []string
	dups                   int
	dupExamples            []int64
}

// summarize adds up what the workers saw and counts duplicate IDs (of one
// tag: IDs of different tags may be equal).
func summarize(workers []*loadWorker) loadSummary {
	s := loadSummary{perInst: map[string]int{}, unavailable: map[string]int{}, transport: map[string]int{}}
	for _, w := range workers {
		s.ids = append(s.ids, w.ids...)
		s.perInst[w.inst.name] += len(w.ids)
		s.unavailable[w.inst.name] += w.unavailable
		s.transport[w.inst.name] += w.transportErrs
		s.other += w.other
		if s.firstOther == "" {
			s.firstOther = w.firstOther
		}
		s.violations = append(s.violations, w.violations...)
	}
	s.dups, s.dupExamples = checkUnique(s.ids)
	return s
}
