package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRespHalfSentCommandsDoNotHoldTheCap (docs/api.md §15): resp_max_conns
// connections each send the start of a GET and nothing more (half of them
// then trickle a byte every 0.5 s), dialling again 50 ms after they are
// closed. A new client is still served: at the cap the connection stuck
// mid-command the longest is closed for it. And no attacker connection
// lives past resp_command_timeout (its default, 5 s): the command once
// begun must complete within it. Before, every other client was answered
// "-ERR max number of clients reached" for resp_idle_timeout (5 min).
func TestRespHalfSentCommandsDoNotHoldTheCap(t *testing.T) {
	const (
		capConns   = 200
		legit      = 50
		cmdTimeout = 5 * time.Second // resp_command_timeout's default
		watch      = cmdTimeout + 3*time.Second
		slack      = 2 * time.Second
	)
	env := setup(t)
	respAddr := loopbackAddr(t)
	in := startInstance(t, env, "halfsent", env.db.newDatabase(t), config(map[string]any{
		"resp_addr": respAddr, "resp_max_conns": capConns,
	}), true)
	const get = "*2\r\n$3\r\nGET\r\n$13\r\ntest_business\r\n"
	waitRespReply(t, respAddr, get, "$")

	var st halfStats
	stop := make(chan struct{})
	var wg sync.WaitGroup
	began := time.Now()
	for i := range capConns {
		// The bytes; a trickler declares a longer argument, so
		// that its bytes never complete it.
		half, trickle := "*2\r\n$3\r\nGET\r\n$13\r\ntest_busi", i%2 == 1
		if trickle {
			half = "*2\r\n$3\r\nGET\r\n$1000\r\ntest_busi"
		}
		wg.Go(func() { halfSender(respAddr, half, trickle, stop, &st) })
	}
	// The cap is full of half-sent commands: none idle.
	deadline := time.Now().Add(10 * time.Second)
	for {
		open, _ := metricSum(in, "idalloc_resp_connections")
		idle, _ := metricSum(in, "idalloc_resp_idle_connections")
		if open == capConns && idle == 0 {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("after 10s: %v RESP connections open, %v idle; want the %d attackers' alone, none idle", open, idle, capConns)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d connections with half-sent commands hold resp_max_conns after %s", capConns, ms(time.Since(began)))

	// A new client, one connection per GET.
	var took []time.Duration
	answered := 0
	var firstErr string
	for range legit {
		t0 := time.Now()
		reply, err := respCommand(respAddr, get)
		took = append(took, time.Since(t0))
		switch {
		case err == nil && strings.HasPrefix(reply, "$") && !strings.HasPrefix(reply, "$-"):
			answered++
		case firstErr == "":
			firstErr = fmt.Sprintf("%q, %v", strings.TrimSpace(reply), err)
		}
	}
	time.Sleep(time.Until(began.Add(watch)))
	close(stop)
	wg.Wait()

	p := percentiles(took)
	t.Logf("new client at the cap: %d of %d GETs answered (%.1f %%), latency p50 %s, p99 %s, max %s; first failure: %s",
		answered, legit, 100*float64(answered)/legit, ms(p(50)), ms(p(99)), ms(p(100)), firstErr)
	st.mu.Lock()
	defer st.mu.Unlock()
	t.Logf("attackers over %s: %d connections; %d closed by the server (%d answered an error first: %q); the longest lived %s",
		ms(watch), st.opened, st.closed, st.answered, st.firstAnswer, ms(st.longest))
	for _, name := range []string{"idalloc_resp_idle_connections_closed_total", "idalloc_resp_incomplete_connections_closed_total",
		"idalloc_resp_connections_refused_total", `idalloc_resp_connections_closed_total{reason="command_timeout"}`} {
		v, ok := metricSum(in, name)
		t.Logf("%s %v (present: %v)", name, v, ok)
	}
	if answered*100 < legit*99 {
		t.Errorf("new client at resp_max_conns full of half-sent commands: %d of %d GETs answered, want at least 99 %% (first failure: %s)", answered, legit, firstErr)
	}
	if st.longest > cmdTimeout+slack {
		t.Errorf("an attacker connection lived %s with its command never completed, want it closed within resp_command_timeout (%s) + %s", ms(st.longest), cmdTimeout, slack)
	}
	if st.answered == 0 {
		t.Error("no attacker connection was answered an error before it was closed, want the command timeout's error")
	}
}

// halfStats are the half-senders' figures.
type halfStats struct {
	mu                       sync.Mutex
	opened, closed, answered int
	firstAnswer              string
	longest                  time.Duration // of any connection, closed or cut at the end
}

// halfSender dials addr, sends half and nothing more (or, with trickle, one
// byte every 0.5 s), and dials again 50 ms after the server closes the
// connection, until stop.
func halfSender(addr, half string, trickle bool, stop <-chan struct{}, st *halfStats) {
	buf := make([]byte, 512)
	redial(addr, stop, func(c net.Conn) bool {
		opened := time.Now()
		st.mu.Lock()
		st.opened++
		st.mu.Unlock()
		_, err := io.WriteString(c, half)
		var got []byte
		cut := false
		for err == nil {
			select {
			case <-stop:
				cut = true
			default:
			}
			if cut {
				break
			}
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			var n int
			n, err = c.Read(buf)
			got = append(got, buf[:n]...)
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				err = nil
				if trickle {
					_, err = c.Write([]byte("x"))
				}
			}
		}
		lived := time.Since(opened)
		_ = c.Close()
		st.mu.Lock()
		st.longest = max(st.longest, lived)
		if !cut {
			st.closed++
			if len(got) > 0 {
				st.answered++
				if st.firstAnswer == "" {
					st.firstAnswer = strings.TrimSpace(string(got))
				}
			}
		}
		st.mu.Unlock()
		return cut
	})
}

// redial dials addr and hands each connection to use, which closes it and
// reports whether to stop; it dials again 50 ms after use returns or a dial
// fails, until stop is closed. The attackers and greedy clients of the
// e2e tests reconnect as soon as they are cut off.
func redial(addr string, stop <-chan struct{}, use func(net.Conn) (done bool)) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil && use(c) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRespReply waits until cmd over RESP at addr answers a line that
// starts with prefix.
func waitRespReply(t *testing.T, addr, cmd, prefix string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		reply, err := respCommand(addr, cmd)
		if err == nil && strings.HasPrefix(reply, prefix) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q over RESP: %q %v, want %q… within 20s", cmd, reply, err, prefix)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHTTPSlowHeadersDoNotHoldTheCap (docs/api.md §15): twice max_conns
// connections each send a request's headers one line every 0.2 to 0.5 s,
// dialling again when closed, while two legitimate clients call /alloc for
// 10 s, one over a keep-alive connection (net/http's client) and one on a
// new connection per request. At least 99 % of each one's requests are
// answered: at the cap, a connection whose request's headers are not
// complete is closed for a newcomer, the one begun longest first. Before,
// the cap refused them (503) while the attackers' headers were coming, up
// to the 5 s header timeout each.
func TestHTTPSlowHeadersDoNotHoldTheCap(t *testing.T) {
	const (
		capConns  = 300
		attackers = 2 * capConns
		legitFor  = 10 * time.Second
		maxP99    = 2 * time.Second // generous, for a loaded machine: the goal, 100 ms, is reported
	)
	raiseFileLimit(t, 4*attackers)
	env := setup(t)
	in := startInstance(t, env, "slowheaders", env.db.newDatabase(t), config(map[string]any{"max_conns": capConns}), true)

	var st slowStats
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range attackers {
		wg.Go(func() { slowHeaders(in.addr, uint64(i), stop, &st) })
	}
	time.Sleep(2 * time.Second) // every attacker has dialled and sent a line or more

	path := "/alloc?app_tag=test_business"
	clients := []struct {
		name string
		hc   *http.Client
	}{
		{"keep-alive", &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}},
		{"new connection each", &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}},
	}
	results := make([]legitResult, len(clients))
	var lwg sync.WaitGroup
	for i, c := range clients {
		lwg.Go(func() { results[i] = callFor(c.hc, in.url+path, legitFor) })
	}
	lwg.Wait()
	close(stop)
	wg.Wait()

	st.mu.Lock()
	t.Logf("%d slow-header attackers at max_conns %d: %d connections, %d answered 503 at the cap, %d closed unanswered",
		attackers, capConns, st.opened, st.refused, st.closedSilently)
	st.mu.Unlock()
	for _, name := range []string{"idalloc_http_idle_connections_closed_total", "idalloc_http_incomplete_connections_closed_total",
		"idalloc_http_connections_refused_total"} {
		v, ok := metricSum(in, name)
		t.Logf("%s %v (present: %v)", name, v, ok)
	}
	for i, c := range clients {
		r := results[i]
		p := percentiles(r.took)
		share := 100 * float64(r.answered) / float64(max(r.sent, 1))
		t.Logf("%s client: %d of %d /alloc answered (%.2f %%; %d got 503, %d failed), latency p50 %s, p99 %s, max %s; first failure: %s",
			c.name, r.answered, r.sent, share, r.refused, r.failed, ms(p(50)), ms(p(99)), ms(p(100)), r.firstFailure)
		if r.sent == 0 || r.answered*100 < r.sent*99 {
			t.Errorf("%s client under slow-header attack: %d of %d requests answered (%.2f %%), want at least 99 %%", c.name, r.answered, r.sent, share)
		}
		if p(99) > maxP99 {
			t.Errorf("%s client under slow-header attack: p99 %s, want at most %s", c.name, ms(p(99)), maxP99)
		}
	}
}

// slowStats are the slow-header attackers' figures.
type slowStats struct {
	mu                              sync.Mutex
	opened, refused, closedSilently int
}

// slowHeaders dials addr and sends a request's headers one line every 0.2
// to 0.5 s, never ending them, and dials again once the server has closed
// the connection (a write fails), until stop.
func slowHeaders(addr string, seed uint64, stop <-chan struct{}, st *slowStats) {
	rng := rand.New(rand.NewPCG(seed, 29))
	redial(addr, stop, func(c net.Conn) bool {
		st.mu.Lock()
		st.opened++
		st.mu.Unlock()
		// What the server answers, if anything: a 503 at the cap.
		answered := make(chan bool, 1)
		go func() {
			line, _ := bufio.NewReader(c).ReadString('\n')
			answered <- strings.HasPrefix(line, "HTTP/1.1 503")
		}()
		_, err := io.WriteString(c, "GET /alloc?app_tag=test_business HTTP/1.1\r\nHost: idalloc\r\n")
		for i := 0; err == nil; i++ {
			select {
			case <-stop:
				_ = c.Close()
				return true
			case <-time.After(time.Duration(200+rng.IntN(300)) * time.Millisecond):
			}
			_, err = fmt.Fprintf(c, "X-Slow-%d: %d\r\n", i, i)
		}
		_ = c.Close()
		refused := <-answered
		st.mu.Lock()
		if refused {
			st.refused++
		} else {
			st.closedSilently++
		}
		st.mu.Unlock()
		return false
	})
}

// legitResult is what a legitimate client saw.
type legitResult struct {
	sent, answered, refused, failed int
	took                            []time.Duration
	firstFailure                    string
}

// callFor calls GET url with hc one request after another for d, and
// counts the answers: 200 with an ID, 503, or anything else.
func callFor(hc *http.Client, url string, d time.Duration) legitResult {
	var r legitResult
	for end := time.Now().Add(d); time.Now().Before(end); {
		t0 := time.Now()
		resp, err := hc.Get(url)
		var body []byte
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		r.took = append(r.took, time.Since(t0))
		r.sent++
		var failure string
		switch {
		case err != nil:
			r.failed++
			failure = err.Error()
		case resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"id":`):
			r.answered++
		case resp.StatusCode == http.StatusServiceUnavailable:
			r.refused++
			failure = fmt.Sprintf("HTTP 503 %s", strings.TrimSpace(string(body)))
		default:
			r.failed++
			failure = fmt.Sprintf("HTTP %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		if failure != "" && r.firstFailure == "" {
			r.firstFailure = failure
		}
		time.Sleep(5 * time.Millisecond)
	}
	return r
}

// percentiles sorts took and returns its q-th percentile for q in 0..100
// (nearest rank), 0 for none.
func percentiles(took []time.Duration) func(q int) time.Duration {
	slices.Sort(took)
	return func(q int) time.Duration {
		if len(took) == 0 {
			return 0
		}
		i := (len(took)*q + 99) / 100
		return took[max(i-1, 0)]
	}
}
