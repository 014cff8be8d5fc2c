//go:build linux

package manytags

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/buildtest"
	"github.com/idalloc/idalloc/internal/freeport"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store/storetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

// counts are the tag counts IDALLOC_TEST_MANY_TAGS names; the test skips
// without it.
func counts(t *testing.T) []int {
	t.Helper()
	v := os.Getenv("IDALLOC_TEST_MANY_TAGS")
	if v == "" {
		t.Skip("IDALLOC_TEST_MANY_TAGS not set (e.g. 10000,100000): skipping the many-tags measurement")
	}
	var ns []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > segment.MaxCreateTags {
			t.Fatalf("IDALLOC_TEST_MANY_TAGS=%q: want tag counts from 1 to %d, comma-separated", v, segment.MaxCreateTags)
		}
		ns = append(ns, n)
	}
	return ns
}

// idle is how long the processes idle while their memory is sampled.
func idle(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("IDALLOC_TEST_MANY_TAGS_IDLE")
	if v == "" {
		return time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		t.Fatalf("IDALLOC_TEST_MANY_TAGS_IDLE=%q: want a duration of a second or more", v)
	}
	return d
}

// TestManyTags prints, per store and tag count, what many tags cost a
// process (see the package comment).
func TestManyTags(t *testing.T) {
	ns := counts(t)
	window := idle(t)
	bin, err := buildtest.Idalloc()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []storetest.Driver{storetest.SQLite(), storetest.MySQL()} {
		for _, n := range ns {
			t.Run(fmt.Sprintf("%s/%d", d.Name, n), func(t *testing.T) {
				measure(t, bin, d, n, window)
			})
		}
	}
}

func measure(t *testing.T, bin string, d storetest.Driver, n int, window time.Duration) {
	ctx := t.Context()
	one := start(t, bin, d.NewDB(t), "one")
	dbMany := d.NewDB(t)
	many := start(t, bin, dbMany, "many")

	tags := make([]segment.Tag, n)
	for i := range tags {
		tags[i] = segment.Tag{AppTag: tagName(i), Step: 1000, Start: 1, Description: "tenant " + strconv.Itoa(i)}
	}
	st := dbMany.Open(t)
	began := time.Now()
	created, err := st.CreateTags(ctx, tags)
	if err != nil || slices.Contains(created, false) {
		t.Fatalf("CreateTags: %v", err)
	}
	createTook := time.Since(began)
	for !many.alloc(t, tagName(n-1), false) { // served once a reload has read it
		time.Sleep(100 * time.Millisecond)
	}
	servedAfter := time.Since(began)

	began = time.Now()
	takeIDs(t, many, n, tagName)
	oneEachTook := time.Since(began)
	// The process with one tag is asked as often, for its one tag: the
	// same requests, so that what differs is the tags.
	began = time.Now()
	takeIDs(t, one, n, func(int) string { return "test_business" })
	oneTagTook := time.Since(began)
	many.alloc(t, "test_business", true)
	// A monitor page looks once: from then on every tag that took an ID
	// holds its history (the sparkline's five minutes) through the window.
	one.get(t, "/status", "")
	many.get(t, "/status", "")

	// Idle serving: nothing asked, tag-list reloads every tag_refresh.
	var peakOne, peakMany, lateOne, lateMany int64 // late: over the window's second half
	began = time.Now()
	for time.Since(began) < window {
		rssOne, rssMany := one.mem(t).rss, many.mem(t).rss
		peakOne, peakMany = max(peakOne, rssOne), max(peakMany, rssMany)
		if time.Since(began) >= window/2 {
			lateOne, lateMany = max(lateOne, rssOne), max(lateMany, rssMany)
		}
		time.Sleep(time.Second)
	}
	hwmOne, hwmMany := one.mem(t).hwm, many.mem(t).hwm

	text, textTook := many.get(t, "/metrics", "")
	zipped, zipTook := many.get(t, "/metrics", "gzip")
	status, statusTook := many.get(t, "/status", "")
	statusZipped, statusZipTook := many.get(t, "/status", "gzip")
	oneText, _ := one.get(t, "/metrics", "")

	p99One, p99Many, p50One, p50Many := latencies(t, one, many, tagName(n/2))

	mib := func(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
	t.Logf("%s, %d tags:", d.Name, n)
	t.Logf("  created in bulk through the store in %v (%.0f tags/s); the running process served the last %v after the create began",
		createTook.Round(time.Millisecond), float64(n)/createTook.Seconds(), servedAfter.Round(time.Millisecond))
	t.Logf("  one ID of each tag over HTTP (8 clients): %v; as many IDs of the one tag of the other process: %v",
		oneEachTook.Round(time.Millisecond), oneTagTook.Round(time.Millisecond))
	perTag := func(one, many int64) float64 { return float64(many-one) * 1024 / float64(n) }
	t.Logf("  peak RSS over %v idle (sampled every second): %s with one tag, %s with %d: %.0f bytes per tag above the process with one tag",
		window, mib(peakOne), mib(peakMany), n, perTag(peakOne, peakMany))
	t.Logf("  peak RSS over the second half of it: %s with one tag, %s with %d: %.0f bytes per tag",
		mib(lateOne), mib(lateMany), n, perTag(lateOne, lateMany))
	t.Logf("  VmHWM (every moment since start, the create and the IDs taken included): %s with one tag, %s with %d", mib(hwmOne), mib(hwmMany), n)
	t.Logf("  /metrics: %d bytes of text (%v), %d gzipped (%v); %d bytes with one tag", len(text), textTook.Round(time.Millisecond),
		len(zipped), zipTook.Round(time.Millisecond), len(oneText))
	t.Logf("  /status: %d bytes in %v, %d gzipped in %v", len(status), statusTook.Round(time.Millisecond),
		len(statusZipped), statusZipTook.Round(time.Millisecond))
	t.Logf("  /alloc of one tag, one client, alternating rounds: p50 %v, p99 %v with one tag; p50 %v, p99 %v with %d",
		p50One, p99One, p50Many, p99Many, n)
}

func tagName(i int) string { return fmt.Sprintf("tenant-%06d", i) }

// takeIDs takes one ID of each tag(i), i from 0 to n-1, 8 clients at once.
func takeIDs(t *testing.T, p *proc, n int, tag func(i int) string) {
	next := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if !p.alloc(t, tag(i), false) {
					errs <- fmt.Errorf("GET /alloc of %s failed", tag(i))
					return
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// latencies times /alloc of test_business on one and of tag on many, one
// request at a time, in 20 alternating rounds of 500: p99 and p50 of each.
func latencies(t *testing.T, one, many *proc, tag string) (p99One, p99Many, p50One, p50Many time.Duration) {
	var a, b []time.Duration
	for range 20 {
		a = append(a, one.timeAllocs(t, "test_business", 500)...)
		b = append(b, many.timeAllocs(t, tag, 500)...)
	}
	slices.Sort(a)
	slices.Sort(b)
	q := func(s []time.Duration, f float64) time.Duration {
		return s[int(f*float64(len(s)-1))].Round(time.Microsecond)
	}
	return q(a, 0.99), q(b, 0.99), q(a, 0.5), q(b, 0.5)
}

// proc is one idalloc process.
type proc struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
}

// start runs idalloc on db with the defaults (tag_refresh 10s, or
// IDALLOC_TEST_MANY_TAGS_REFRESH), snowflake off, and waits until /health
// answers 200. The process is killed at t's
// cleanup.
func start(t *testing.T, bin string, db storetest.DB, name string) *proc {
	t.Helper()
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := map[string]any{
		"http_addr": "127.0.0.1:" + strconv.Itoa(port), "driver": db.Driver, "dsn": db.DSN,
		"shutdown_drain": "0s", "snowflake": map[string]any{"enabled": false},
	}
	if v := os.Getenv("IDALLOC_TEST_MANY_TAGS_REFRESH"); v != "" {
		c["segment"] = map[string]any{"tag_refresh": v}
	}
	cfg, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, name+".json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfgPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, url: "http://127.0.0.1:" + strconv.Itoa(port),
		client: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16, DisableCompression: true}}}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logFile.Name()); err == nil {
				t.Logf("%s's log:\n%s", name, b[max(0, len(b)-4000):])
			}
		}
	})
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := p.client.Get(p.url + "/health"); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /health not 200 within a minute", name)
		}
	}
}

// alloc takes one ID of tag, reporting whether it got one; must fails t
// when it did not.
func (p *proc) alloc(t *testing.T, tag string, must bool) bool {
	resp, err := p.client.Get(p.url + "/alloc?app_tag=" + tag)
	if err != nil {
		t.Fatalf("GET /alloc: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK && must {
		t.Fatalf("GET /alloc?app_tag=%s: %d %s", tag, resp.StatusCode, body)
	}
	return resp.StatusCode == http.StatusOK
}

// timeAllocs times n requests for one ID of tag, one at a time.
func (p *proc) timeAllocs(t *testing.T, tag string, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		began := time.Now()
		p.alloc(t, tag, true)
		out[i] = time.Since(began)
	}
	return out
}

// get reads path, gzipped when encoding is "gzip" (the body then as sent),
// and how long it took.
func (p *proc) get(t *testing.T, path, encoding string) ([]byte, time.Duration) {
	req, err := http.NewRequest(http.MethodGet, p.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	began := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	body, err := io.ReadAll(resp.Body)
	took := time.Since(began)
	_ = resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", path, resp.StatusCode, err)
	}
	if encoding == "gzip" && resp.Header.Get("Content-Encoding") != "gzip" {
		t.Logf("GET %s with gzip asked: answered %s", path, cmp.Or(resp.Header.Get("Content-Encoding"), "uncompressed"))
	}
	return body, took
}

// memory is a process's resident memory, in kB.
type memory struct{ rss, hwm int64 }

// mem reads the process's VmRSS and VmHWM.
func (p *proc) mem(t *testing.T) memory {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read the process's memory: %v", err)
	}
	defer f.Close()
	var m memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		for _, field := range []struct {
			name string
			to   *int64
		}{{"VmRSS:", &m.rss}, {"VmHWM:", &m.hwm}} {
			if rest, ok := bytes.CutPrefix(line, []byte(field.name)); ok {
				*field.to, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			}
		}
	}
	return m
}
