package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRespMaxPending: 60 Redis-protocol clients pipeline SNOWFLAKE 1000
// (29 bytes sent, 26 KB answered) in 32 KB writes and never read, dialling
// again whenever they are cut, for at least 10 s, against the default
// configuration. Each connection may hold resp_max_pending (8 MiB) of
// answers waiting, which alone let the 60 take the process to 560 MB;
// resp_max_pending_total (32 MiB across connections) keeps it under
// 300 MB, cutting the connection holding the most. The cuts are
// counted in idalloc_resp_connections_closed_total, by reason.
func TestRespMaxPending(t *testing.T) {
	env := setup(t)
	const (
		clients = 60
		maxRSS  = 300 << 20
		minLoad = 10 * time.Second
		maxLoad = 30 * time.Second
	)
	respAddr := loopbackAddr(t)
	in := startInstance(t, env, "pending", env.db.newDatabase(t), config(map[string]any{
		"resp_addr": respAddr, "snowflake": map[string]any{"enabled": true},
	}), true)
	pid := in.pid()
	startRSS, err := vmRSS(pid)
	if err != nil {
		t.Skipf("e2e: cannot read the server's VmRSS: %v", err)
	}
	waitRespSnowflake(t, respAddr)

	one := "*2\r\n$9\r\nSNOWFLAKE\r\n$4\r\n1000\r\n"
	chunk := []byte(strings.Repeat(one, 32<<10/len(one)))
	stop := make(chan struct{})
	var cutSeen atomic.Int64
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() { neverRead(respAddr, chunk, stop, &cutSeen) })
	}

	var peak int64
	const metric = "idalloc_resp_connections_closed_total"
	began := time.Now()
	for tick := 0; ; tick++ {
		if rss, err := vmRSS(pid); err == nil {
			peak = max(peak, rss)
		}
		elapsed := time.Since(began)
		if elapsed >= minLoad && tick%25 == 0 {
			if cut, _ := metricSum(in, metric); cut > 0 || elapsed >= maxLoad {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	cut, ok := metricSum(in, metric)
	total, _ := metricSum(in, metric+`{reason="output_total"}`)
	limit, _ := metricSum(in, metric+`{reason="output_limit"}`)
	t.Logf("default resp_max_pending and resp_max_pending_total, %d clients that never read, %s: VmRSS %d MB at start, peak %d MB; %.0f connections closed (%.0f at resp_max_pending_total, %.0f at resp_max_pending; %d cuts seen by the clients)",
		clients, time.Since(began).Round(time.Second), startRSS>>20, peak>>20, cut, total, limit, cutSeen.Load())
	if peak > maxRSS {
		t.Errorf("peak VmRSS %d MB, want under %d MB", peak>>20, maxRSS>>20)
	}
	if !ok || cut == 0 {
		t.Errorf("%s = %v (present: %v), want it above 0", metric, cut, ok)
	}
}

// neverRead dials addr and writes chunk over and over without reading,
// dialling again when the server cuts the connection, until stop.
func neverRead(addr string, chunk []byte, stop <-chan struct{}, cuts *atomic.Int64) {
	redial(addr, stop, func(c net.Conn) bool {
		var err error
		for err == nil {
			select {
			case <-stop:
				_ = c.Close()
				return true
			default:
			}
			_ = c.SetWriteDeadline(time.Now().Add(250 * time.Millisecond))
			_, err = c.Write(chunk)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				err = nil // the server is busy with the commands before
			}
		}
		cuts.Add(1)
		_ = c.Close()
		return false
	})
}

// waitRespSnowflake waits until SNOWFLAKE over RESP at addr answers an ID:
// the worker lease is held.
func waitRespSnowflake(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		reply, err := respCommand(addr, "SNOWFLAKE\r\n")
		if err == nil && strings.HasPrefix(reply, "$") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("SNOWFLAKE over RESP: %q %v, want an ID within 20s", reply, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// respCommand sends one inline command on a new connection and returns the
// first line of the answer.
func respCommand(addr, cmd string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// vmRSS reads the resident set size of process pid from /proc.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS line")
}
