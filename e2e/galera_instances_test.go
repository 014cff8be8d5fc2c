package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// galeraInstances prepares one instance per node (a on node 1, b on 2, c on
// 3), each with the plain DSN of its own node.
func galeraInstances(t *testing.T, c *galeraCluster, db string, cfg map[string]any) []*instance {
	t.Helper()
	var insts []*instance
	for i, n := range c.nodes {
		insts = append(insts, newInstance(t, c.env, string(rune('a'+i)), n.dsn(db), cfg))
	}
	return insts
}

// startTogether starts every instance at the same moment and waits until
// each answers /health 200.
func startTogether(t *testing.T, insts []*instance) {
	t.Helper()
	errs := make([]error, len(insts))
	var wg sync.WaitGroup
	for i, in := range insts {
		wg.Go(func() { errs[i] = in.start(false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// metricSum adds up the samples of the metric family name on in's /metrics;
// ok is false when the family is absent.
func metricSum(in *instance, name string) (sum float64, ok bool) {
	tr := &http.Transport{Proxy: nil} // 127.0.0.1 only, whatever the environment says
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	resp, err := hc.Get(in.url + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) || (len(line) > len(name) && line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
			sum += v
			ok = true
		}
	}
	return sum, ok
}

// storeFigures describes an instance's segment fetches and store conflicts
// from its /metrics.
func storeFigures(in *instance) string {
	f, _ := metricSum(in, "idalloc_segment_fetches_total")
	e, _ := metricSum(in, "idalloc_segment_fetch_errors_total")
	s := fmt.Sprintf("%s: %.0f fetches, %.0f failed", in.name, f, e)
	if c, ok := metricSum(in, "idalloc_store_conflicts_total"); ok {
		s += fmt.Sprintf(", %.0f conflicts retried", c)
	}
	return s
}

// galeraLoad starts perInstance keep-alive clients of /alloc?app_tag=tag on
// every instance, which run until wait is called or ctx ends; issued[i]
// counts the IDs insts[i] handed out. wait stops them and returns them.
func galeraLoad(ctx context.Context, insts []*instance, perInstance int, tag string, issued []*atomic.Int64) (wait func() []*loadWorker) {
	var globalMax atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var workers []*loadWorker
	for i, in := range insts {
		for range perInstance {
			w := &loadWorker{inst: in, c: newRawClient(in.addr, 10*time.Second)}
			workers = append(workers, w)
			wg.Go(func() {
				defer w.c.close()
				w.run(ctx, stop, "/alloc?app_tag="+tag, issued[i], &globalMax)
			})
		}
	}
	return sync.OnceValue(func() []*loadWorker {
		close(stop)
		wg.Wait()
		return workers
	})
}

// loadSummary is what the workers of galeraLoad saw, per instance and in all.
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

// summarize adds up what the workers saw and counts duplicate IDs.
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
