//go:build browser

package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/internal/storefault"
	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// monitorRig is a real server on a real SQLite store, as main wires it,
// served over TCP for a browser; the store can be stopped, and the
// metrics' clock (rates and histories) moved ahead of the real one.
type monitorRig struct {
	srv   *Server
	store *storefault.Stoppable
	url   string
	lease workerlease.Lease
	seen  *seenRequests
	ahead atomic.Int64 // how far the metrics' clock is ahead, in ns
}

// seenRequests records what the browser sent, to prove what the page does
// with the token.
type seenRequests struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (s *seenRequests) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seenRequests) list() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*http.Request(nil), s.reqs...)
}

// newMonitorRig starts the server. With snowflake it also holds a worker
// lease from the store and issues snowflake IDs for it; the generator is
// the real one, fenced by nothing, which a test serving for seconds does
// not need.
func newMonitorRig(t *testing.T, adminToken string, withSnowflake bool) *monitorRig {
	t.Helper()
	ctx := context.Background()
	st := &storefault.Stoppable{Store: storetest.SQLite().Open(t)}
	reg := prometheus.NewRegistry()
	obs := mustObserver(t, reg)
	alloc, err := segment.New(ctx, st, segment.Config{Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	deps := Deps{Segments: alloc, Store: st}
	rg := &monitorRig{store: st, seen: &seenRequests{}}
	if withSnowflake {
		svc, err := workerlease.NewService(st, workerlease.Config{Holder: "monitor-test"})
		if err != nil {
			t.Fatal(err)
		}
		keeper, err := workerlease.NewKeeper(workerlease.KeeperConfig{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		keeper.Start(ctx)
		t.Cleanup(func() { _ = keeper.Close(ctx, 0) }) // the reservation covers the IDs issued
		deadline := time.Now().Add(10 * time.Second)
		for ok := false; !ok; rg.lease, ok = keeper.Lease() {
			if time.Now().After(deadline) {
				t.Fatal("no worker lease within 10s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		layout, err := snowflake.NewLayout(time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		src, err := leased.New(keeper, layout, snowflake.Settings{Observer: obs})
		if err != nil {
			t.Fatal(err)
		}
		deps.Snowflake, deps.Leases, deps.OwnLease = src, svc, keeper
	}
	watch(t, obs, deps, metrics.Sources{Now: func() time.Time { return time.Now().Add(time.Duration(rg.ahead.Load())) }})
	srv, err := New(Config{AdminToken: adminToken, Observer: obs, Metrics: mustMetrics(t, reg), Gatherer: reg, HealthInterval: 100 * time.Millisecond}, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ts := httptest.NewServer(rg.seen.wrap(srv.Handler()))
	t.Cleanup(ts.Close)
	rg.srv, rg.url = srv, ts.URL
	return rg
}

// get fetches path over HTTP and decodes the JSON answer.
func (rg *monitorRig) get(t *testing.T, path string) map[string]any {
	t.Helper()
	res, err := http.Get(rg.url + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d, %v", path, res.StatusCode, err)
	}
	return body
}

// TestMonitorInBrowser drives the monitor page in headless Chromium: it
// follows allocations, decodes a snowflake ID, tells a stopped store and a
// drain, reads well at desktop and phone widths, and asks for the admin
// token when one is set. Screenshots go to $IDALLOC_TEST_ARTIFACTS, or the
// test's temporary directory.
func TestMonitorInBrowser(t *testing.T) {
	exe := findBrowser()
	if exe == "" {
		t.Skip("no chromium or chrome on PATH (apt-get install chromium): the monitor page's browser test needs one")
	}
	// Bounds the whole test, browser included: nothing here waits longer.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	browser := startBrowser(t, ctx, exe)
	dir := artifactDir(t)

	t.Run("follows the instance", func(t *testing.T) { testMonitorFollows(t, browser, dir) })
	t.Run("asks for the admin token", func(t *testing.T) { testMonitorLogin(t, browser, dir) })
	t.Run("filters, pages and ranks the busiest", func(t *testing.T) { testMonitorPages(t, browser, dir) })
	t.Run("reads at a glance", func(t *testing.T) { testMonitorAtAGlance(t, browser, dir) })
}

func testMonitorFollows(t *testing.T, browser context.Context, dir string) {
	rg := newMonitorRig(t, "", true)
	rg.get(t, "/alloc?app_tag=test_business") // the tag's first segment, 100,000 IDs
	tb := newTab(t, browser)
	tb.run("load /", chromedp.Navigate(rg.url+"/"))

	issued, buffered := cellJS("test_business", "c-issued"), cellJS("test_business", "c-buffered-text")
	tb.waitFor("test_business with its buffer", issued+` === "1" && `+buffered+`.startsWith("99,999 of 100,000")`)
	tb.waitFor("state ok", `document.getElementById("state-text").textContent === "ok"`)
	tb.run("mark the document", chromedp.Evaluate[chromedp.Void](`window.notReloaded = true`))

	for range 1000 {
		rg.get(t, "/alloc?app_tag=test_business")
	}
	tb.waitFor("issued and buffered to follow 1,000 IDs",
		issued+` === "1,001" && `+buffered+`.startsWith("98,999 of 100,000")`)
	if got := tb.eval("window.notReloaded === true"); got != "true" {
		t.Fatalf("the page was reloaded to show new figures")
	}
	// Past 10% of the segment the next one is fetched in the background:
	// the second bar fills.
	for range 9 {
		rg.get(t, "/alloc?app_tag=test_business&count=1000")
	}
	tb.waitFor("the prefetched segment", buffered+`.endsWith("next 200,000") && `+issued+` === "10,001"`)
	tb.waitFor("an IDs/s figure", cellJS("test_business", "c-rate-now")+` !== "–"`)
	if got := tb.eval(cellJS("test_business", "c-maxid")); got != "300,000" {
		t.Errorf("max_id cell = %q, want 300,000", got)
	}

	// Decode through the page: the ID passes 2^53, so a Number would round it.
	idStr := rg.get(t, "/snowflake")["id_str"].(string)
	if id, _ := strconv.ParseInt(idStr, 10, 64); id <= 1<<53 {
		t.Fatalf("snowflake ID %s is below 2^53: it proves nothing about rounding", idStr)
	}
	tb.run("decode", chromedp.SendKeys(chromedp.ID("decode-id"), idStr), chromedp.Click(chromedp.CSS("#decode-form button")))
	tb.waitFor("the decoded ID", `(document.getElementById("decoded-id") || {}).textContent === "`+idStr+`"`)
	if got, want := tb.eval(`document.querySelector("#decoded dd:nth-of-type(4)").textContent`), strconv.FormatInt(rg.lease.WorkerID, 10); got != want {
		t.Errorf("decoded worker ID = %q, want %q", got, want)
	}
	tb.waitFor("the lease and the snowflake ID issued", `document.getElementById("sf-worker").textContent.startsWith("`+
		strconv.FormatInt(rg.lease.WorkerID, 10)+` (max 1023)") && document.getElementById("sf-issued").textContent === "1"`)

	// A dated tag: its IDs' shape, and its current period (docs/api.md §11).
	res, err := http.Post(rg.url+"/tags", "application/json", strings.NewReader(
		`{"app_tag":"orders","format":"dated","period":"year","prefix":"ORD","separator":"-","step":10}`))
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("POST /tags: %v %v", res, err)
	}
	_ = res.Body.Close()
	for range 3 {
		rg.get(t, "/alloc?app_tag=orders")
	}
	stamp := strconv.Itoa(time.Now().UTC().Year())
	tb.waitFor("the dated tag's shape and period", cellJS("orders", "c-dated-shape")+` === "ORD-yyyy-nnnnnn" && `+
		cellJS("orders", "c-dated-period")+`.startsWith("period `+stamp+`: 3 issued here, 999,996 left · ends in ")`)
	if got := tb.eval(cellJS("test_business", "c-dated-period")); got != "" {
		t.Errorf("a sequential tag shows a period: %q", got)
	}

	tb.screenshot(dir, "monitor-1280x800.png", 1280, 800, false)
	tb.screenshot(dir, "monitor-390x844.png", 390, 844, true)
	if w := tb.eval(`document.documentElement.scrollWidth`); w != "390" {
		t.Errorf("at phone width the page is %s px wide, want 390: it scrolls sideways", w)
	}
	tb.run("back to desktop width", chromedp.EmulateViewport(1280, 800))

	rg.store.Down.Store(true)
	tb.waitFor("degraded", `document.getElementById("state-text").textContent.startsWith("degraded") && `+
		`document.getElementById("store").textContent === "unreachable"`)
	tb.screenshot(dir, "monitor-degraded-1280x800.png", 1280, 800, false)
	rg.srv.draining.Store(true)
	tb.waitFor("draining", `document.getElementById("state-text").textContent.startsWith("draining") && `+
		`document.getElementById("drain").textContent === "draining"`)
	tb.checkConsole()

	for _, r := range rg.seen.list() {
		if r.URL.Path == "/status" && r.Header.Get("Sec-Fetch-Site") != "same-origin" {
			t.Errorf("the page's poll came with Sec-Fetch-Site %q, want same-origin", r.Header.Get("Sec-Fetch-Site"))
			break
		}
	}
}

func testMonitorLogin(t *testing.T, browser context.Context, dir string) {
	const token = "monitor-test-token-7f3a"
	rg := newMonitorRig(t, token, false)
	tb := newTab(t, browser)
	tb.run("load /", chromedp.Navigate(rg.url+"/"))
	tb.waitFor("the login field", `!document.getElementById("login").hidden && document.getElementById("tags-section").hidden`)
	tb.screenshot(dir, "monitor-login-1280x800.png", 1280, 800, false)

	tb.run("a wrong token", chromedp.SendKeys(chromedp.ID("token"), "not-the-token"), chromedp.Click(chromedp.CSS("#login-form button")))
	tb.waitFor("the refusal", `document.getElementById("login-error").textContent.includes("missing or wrong admin token")`)
	// Enter, not a click: the form works from the keyboard.
	tb.run("the token", chromedp.SendKeys(chromedp.ID("token"), token+kb.Enter))
	tb.waitFor("the data", `document.querySelector('tr[data-tag="test_business"]') !== null && document.getElementById("login").hidden`)
	tb.waitFor("a few polls", `document.getElementById("state-text").textContent === "ok"`)
	time.Sleep(1500 * time.Millisecond) // a poll or two more, with the token

	kept := tb.eval(`[location.href, document.cookie, localStorage.length, sessionStorage.length, document.documentElement.outerHTML.includes("` + token + `")].join("|")`)
	if want := rg.url + "/||0|0|false"; kept != want {
		t.Errorf("href|cookie|localStorage|sessionStorage|token in the DOM = %q, want %q", kept, want)
	}
	tb.checkConsole()

	var authorized int
	for _, r := range rg.seen.list() {
		if strings.Contains(r.URL.String(), token) {
			t.Errorf("the token went into a URL: %s", r.URL)
		}
		if r.URL.Path != "/status" || r.Header.Get("Authorization") != "Bearer "+token {
			continue
		}
		authorized++
		if r.Header.Get("Sec-Fetch-Site") != "same-origin" {
			t.Errorf("a poll with the token came with Sec-Fetch-Site %q, want same-origin", r.Header.Get("Sec-Fetch-Site"))
		}
	}
	if authorized < 2 {
		t.Errorf("%d polls carried the token as a Bearer header, want at least 2", authorized)
	}

	tb.run("forget the token", chromedp.Click(chromedp.ID("forget")))
	tb.waitFor("the login field again", `!document.getElementById("login").hidden && document.querySelectorAll("#tags tbody tr").length === 0`)
}

// testMonitorPages: with more tags than a page, the page shows 100 at a
// time, pages forward and back, filters by prefix (refusing one that no
// tag can start with), and ranks the busiest first while IDs flow.
func testMonitorPages(t *testing.T, browser context.Context, dir string) {
	rg := newMonitorRig(t, "", false)
	var tags []string
	for i := range 250 {
		tags = append(tags, fmt.Sprintf(`{"app_tag":"t-%03d","step":1000}`, i))
	}
	res, err := http.Post(rg.url+"/tags", "application/json", strings.NewReader("["+strings.Join(tags, ",")+"]"))
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("POST /tags of 250: %v %v", res, err)
	}
	_ = res.Body.Close()
	tb := newTab(t, browser)
	tb.run("load /", chromedp.Navigate(rg.url+"/"))
	rows, first := `document.querySelectorAll("#tags tbody tr").length`, `document.querySelector("#tags tbody tr").dataset.tag`
	info := `document.getElementById("page-info").textContent`
	page := func(what string, n int, firstTag, pageInfo string) {
		t.Helper()
		tb.waitFor(what, fmt.Sprintf(`%s === %d && %s === %q && %s === %q`, rows, n, first, firstTag, info, pageInfo))
	}
	page("page one", 100, "t-000", "1–100 of 251")
	if got := tb.eval(`[document.getElementById("prev").disabled, document.getElementById("next").disabled].join()`); got != "true,false" {
		t.Errorf("on page one Previous, Next disabled = %s, want true,false", got)
	}
	tb.run("next", chromedp.Click(chromedp.ID("next")))
	page("page two", 100, "t-100", "101–200 of 251")
	tb.run("next", chromedp.Click(chromedp.ID("next")))
	page("the last page", 51, "t-200", "201–251 of 251")
	if got := tb.eval(`document.getElementById("next").disabled`); got != "true" {
		t.Errorf("on the last page Next is enabled")
	}
	tb.run("previous", chromedp.Click(chromedp.ID("prev")))
	page("page two again", 100, "t-100", "101–200 of 251")

	tb.run("filter", chromedp.SendKeys(chromedp.ID("filter"), "t-12"))
	page("the filtered tags from page one", 10, "t-120", "1–10 of 10")
	if got := tb.eval(`document.getElementById("tag-count").textContent`); got != "(10 starting with t-12)" {
		t.Errorf("tag count = %q", got)
	}
	setFilter := func(v string) {
		tb.run("filter "+v, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
			`(() => { const f = document.getElementById("filter"); f.value = %q; f.dispatchEvent(new Event("input")); })()`, v)))
	}
	setFilter("t-12 !")
	tb.waitFor("the refusal of a prefix no tag has", `document.getElementById("filter-error").textContent.includes("A-Z a-z 0-9")`)
	if got := tb.eval(rows); got != "10" {
		t.Errorf("after a refused filter %s rows, want the 10 still", got)
	}
	setFilter("zz")
	tb.waitFor("no tag", `document.getElementById("no-tags").textContent === "No tag starts with zz." && !document.getElementById("no-tags").hidden`)
	setFilter("")
	page("every tag again", 100, "t-000", "1–100 of 251")

	// Busiest first, while two tags take IDs (t-137 the faster) and the
	// page polls: the rank follows the rate of the last seconds.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for _, target := range []string{"/alloc?app_tag=t-137&count=50", "/alloc?app_tag=t-042&count=10"} {
				if res, err := http.Get(rg.url + target); err == nil {
					_ = res.Body.Close()
				}
			}
		}
	}()
	tb.run("busiest first", chromedp.Click(chromedp.ID("busiest")))
	tb.waitFor("t-137 then t-042 on top", first+` === "t-137" && document.querySelectorAll("#tags tbody tr")[1].dataset.tag === "t-042"`)
	tb.screenshot(dir, "monitor-busiest-1280x800.png", 1280, 800, false)
	close(stop)
	<-done
	tb.checkConsole()
}
