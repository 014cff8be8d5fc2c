package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/idalloc/idalloc/internal/storefault"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

// monitorRig is a real server on a real SQLite store, as main wires it,
// served over TCP for a browser; the store can be stopped.
type monitorRig struct {
	srv   *Server
	store *storefault.Stoppable
	url   string
	lease workerlease.Lease
	seen  *seenRequests
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
	m := mustMetrics(t, reg)
	alloc, err := segment.New(ctx, st, segment.Config{Observer: m})
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
		src, err := leased.New(keeper, layout, snowflake.Settings{Observer: m})
		if err != nil {
			t.Fatal(err)
		}
		deps.Snowflake, deps.Leases, deps.OwnLease = src, svc, keeper
	}
	srv, err := New(Config{AdminToken: adminToken, Metrics: m, Gatherer: reg, HealthInterval: 100 * time.Millisecond}, deps)
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
	tb.waitFor("an IDs/s figure", cellJS("test_business", "c-rate")+` !== "–"`)
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

	// A dated tag: its IDs' shape, and its current period (API.md §11).
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
