package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
