//go:build browser

package server

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/naming"
)

// glanceTag is as long as a tag may be (naming: 64 characters).
const glanceTag = "tenant-0042.orders.invoices:eu-west-1_primary-ledger-archive-q42"

// maxFigure is the widest figure the page is given: 2^63 − 1, 19 digits.
const maxFigure = "9223372036854775807"

// editStatusJS wraps the page's fetch so that window.editStatus, when a
// test sets it, edits each /status answer before the page reads it: the
// widest figures and a lease about to lapse, which no test instance
// reaches by itself.
const editStatusJS = `(() => {
  const fetch0 = window.fetch;
  window.fetch = async (...args) => {
    const res = await fetch0(...args);
    if (!window.editStatus || !String(args[0]).startsWith("/status")) return res;
    const body = await res.json();
    window.editStatus(body);
    return new Response(JSON.stringify(body), { status: res.status, headers: { "Content-Type": "application/json" } });
  };
})()`

// wrapProblemsJS lists what reads badly at the current width: a word of a
// figure or label cell broken across lines, a tag name on more than one
// line or cut without its whole name as a title, anything past the
// viewport's edge.
const wrapProblemsJS = `(() => {
  const problems = [];
  const words = (el) => {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n; (n = walk.nextNode());) {
      if (n.parentElement.closest("svg, [hidden]")) continue;
      for (const m of n.data.matchAll(/\S+/g)) {
        const r = document.createRange();
        r.setStart(n, m.index);
        r.setEnd(n, m.index + m[0].length);
        const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
        if (tops.size > 1) problems.push("broken across lines: " + JSON.stringify(m[0]) + " in " + (el.className || el.id));
      }
    }
  };
  document.querySelectorAll("#tags tbody td:not(.tag-cell), .facts dd, #snowflake dd").forEach(words);
  document.querySelectorAll("#tags .tag").forEach((el) => {
    const r = document.createRange();
    r.selectNodeContents(el);
    const tops = new Set([...r.getClientRects()].filter((x) => x.width > 0).map((x) => Math.round(x.top)));
    if (tops.size !== 1) problems.push("tag name on " + tops.size + " lines: " + el.textContent);
    if (el.scrollWidth > el.clientWidth && el.title !== el.textContent) problems.push("tag name cut without a title: " + el.textContent);
  });
  // At desktop width the table scrolls in its own box when it must; at
  // phone width nothing may pass the screen's edge but the table's head,
  // which is hidden there (each row a card).
  const phone = innerWidth <= 760;
  for (const el of document.querySelectorAll("body *")) {
    const box = el.getBoundingClientRect();
    if (box.width > 0 && box.right > innerWidth + 0.5 && !el.closest("thead") && (phone || !el.closest(".table-wrap"))) {
      problems.push("past the viewport's " + innerWidth + " px: " + el.tagName + "." + (el.getAttribute("class") || "") + " to " + box.right);
    }
  }
  return problems.join("\n");
})()`

// rawZerosJS lists the cells that show a bare 0 (or 0.0) where words
// would say what it means; a worker ID may be 0 and the decoder is left
// out.
const rawZerosJS = `(() => {
  const zero = /(^|[^\d,.])0(\.0+)?(?![\d,.])/;
  const cells = [...document.querySelectorAll("#tags tbody td, #total, #snowflake dd:not(#sf-worker)")];
  return cells.filter((c) => zero.test(c.innerText)).map((c) => (c.dataset.label || c.id) + ": " + JSON.stringify(c.innerText)).join("\n");
})()`

// testMonitorAtAGlance: what the page tells at a glance. A busy tag's
// last minutes as a sparkline with its refills marked and counted, kept by
// the server across a reload; an idle tag's as a flat line; the lease's
// time left as a bar, lease_ttl its width, its colour by what is left;
// words, not bare zeros, for what has not happened; names and 19-digit
// figures never broken inside a word at 1280 and 375 px, and nothing at
// 375 px wider than the screen.
func testMonitorAtAGlance(t *testing.T, browser context.Context, dir string) {
	if len(glanceTag) != 64 || !naming.Valid(glanceTag) {
		t.Fatalf("%q (%d characters) is not a tag of the longest valid name", glanceTag, len(glanceTag))
	}
	rg := newMonitorRig(t, "", true)
	// The longest name starts near the last ID there is: its max_id has
	// 19 digits.
	res, err := http.Post(rg.url+"/tags", "application/json", strings.NewReader(
		`[{"app_tag":"busy","step":100},{"app_tag":"fresh","step":1000},{"app_tag":"`+glanceTag+`","step":1000,"start":9223372030000000001}]`))
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("POST /tags: %v %v", res, err)
	}
	_ = res.Body.Close()
	rg.get(t, "/alloc?app_tag="+glanceTag)
	rg.get(t, "/alloc?app_tag=test_business")

	// Three steps of busy at different paces, each with refills of its
	// 100-ID segments: the metrics' clock moves a step ahead after each.
	rg.get(t, "/status")
	for _, n := range []int{3, 12, 6} {
		for range n {
			rg.get(t, "/alloc?app_tag=busy&count=100")
		}
		rg.ahead.Add(int64(metrics.HistoryStep))
		rg.get(t, "/status") // a sample, in the step just ended
	}
	rg.ahead.Add(int64(metrics.HistoryStep))

	tb := newTab(t, browser)
	tb.run("load /", chromedp.Navigate(rg.url+"/"))
	spark := func(tag, part string) string {
		return fmt.Sprintf(`((document.querySelector('tr[data-tag=%q] .spark-%s') || {getAttribute: () => ""}).getAttribute("d") || "")`, tag, part)
	}
	busyDrawn := spark("busy", "area") + ` !== "" && ` + spark("busy", "refill") + ` !== "" && ` +
		`/^[0-9]+ refills$/.test(` + cellJS("busy", "c-refills") + `)`
	tb.waitFor("busy's sparkline, its refills marked and counted", busyDrawn)
	if got := tb.eval(`document.querySelector('tr[data-tag="busy"] .spark title').textContent`); !strings.Contains(got, "peak") {
		t.Errorf("busy's sparkline title = %q, want its peak", got)
	}
	tb.waitFor("fresh and test_business idle, words for what has not happened",
		cellJS("fresh", "c-rate-now")+` === "idle" && `+cellJS("test_business", "c-rate-now")+` === "idle" && `+
			cellJS("fresh", "c-maxid-main")+` === "not fetched here yet" && `+cellJS("fresh", "c-issued")+` === "none yet" && `+
			cellJS("fresh", "c-step")+` === "1,000 / none yet" && `+cellJS("fresh", "c-buffered-text")+` === "nothing yet" && `+
			cellJS("fresh", "c-waste")+` === "none" && `+cellJS("fresh", "c-refills")+` === "no refill" && `+
			`document.querySelector('tr[data-tag="fresh"] .spark').classList.contains("spark-idle")`)
	if got := tb.eval(rawZerosJS); got != "" {
		t.Errorf("bare zeros on the page:\n%s", got)
	}

	// The server keeps the history: a reload draws it at once.
	before := tb.eval(spark("busy", "refill"))
	tb.run("reload", chromedp.Reload())
	tb.waitFor("busy's sparkline after the reload", busyDrawn)
	if after := tb.eval(spark("busy", "refill")); after != before {
		t.Logf("refill marks moved with the window across the reload: %q, then %q", before, after)
	}

	// The lease bar: lease_ttl its width, green while held well.
	tb.waitFor("the lease bar", `!document.getElementById("sf-lease").hidden && `+
		`document.getElementById("sf-lease").classList.contains("lease-ok") && `+
		`/^[0-9.]+\u00a0s of 30\u00a0s$/.test(document.getElementById("sf-expires-text").textContent)`)
	if w, err := strconv.ParseFloat(tb.eval(`parseFloat(document.getElementById("sf-lease-fill").style.width)`), 64); err != nil || w <= 50 || w > 100 {
		t.Errorf("lease bar at %v%% (%v), want more than half of its width: a lease just taken", w, err)
	}

	// As an instance shows them: the longest name, a 19-digit max_id.
	tb.waitFor("the 19-digit max_id, every tag idle", cellJS(glanceTag, "c-maxid-main")+` === "9,223,372,030,000,001,000" && `+
		`[...document.querySelectorAll("#tags .c-rate-now")].every((c) => c.textContent === "idle")`)
	tb.checkWidths(dir, "monitor-glance", true)

	// The widest figures there are, on the row of the longest name, and a
	// lease about to lapse: fed to the page, since no test instance holds
	// 2^63 − 1 of anything.
	tb.run("edit /status", chromedp.Evaluate[chromedp.Void](editStatusJS))
	tb.run("the widest figures", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.editStatus = (b) => {
  for (const t of b.tags) {
    if (t.app_tag !== %q) continue;
    for (const k of ["step", "current_step", "buffered", "current_left", "current_size", "prefetched", "issued", "max_id", "given_back", "wasted", "refills"]) t[k] = %q;
    t.last_fetch_ms = 3456.789;
  }
  b.buffered = b.snowflake.issued = %q;
  b.snowflake.lease.seconds_left = window.leaseLeft || b.snowflake.lease.seconds_left;
}`, glanceTag, maxFigure, maxFigure)))
	tb.waitFor("the widest figures", cellJS(glanceTag, "c-issued")+` === "9,223,372,036,854,775,807" && `+
		`document.getElementById("total").textContent === "9,223,372,036,854,775,807"`)
	for _, c := range []struct {
		left  float64
		level string
	}{{12, "warn"}, {4.5, "bad"}} {
		tb.run("lease left", chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`window.leaseLeft = %v`, c.left)))
		tb.waitFor(fmt.Sprintf("the lease bar %s at %v s of 30", c.level, c.left), fmt.Sprintf(
			`document.getElementById("sf-lease").classList.contains("lease-%s") && document.getElementById("sf-expires-text").textContent === "%.1f\u00a0s of 30\u00a0s"`,
			c.level, c.left))
	}
	tb.checkWidths(dir, "monitor-glance-widest", false)
	tb.checkConsole()
}

// checkWidths shows the page at 1280×800 and 375×812, saving a whole-page
// screenshot of each as name-desktop-1280x800.png and
// name-phone-375x812.png, and fails the test on what wrapProblemsJS finds
// or a page that scrolls sideways. fits: at 1280 px the table needs no
// scrolling of its own either.
func (tb *tab) checkWidths(dir, name string, fits bool) {
	tb.t.Helper()
	for _, w := range []struct {
		width, height int64
		kind          string
	}{{1280, 800, "desktop"}, {375, 812, "phone"}} {
		tb.screenshot(dir, fmt.Sprintf("%s-%s-%dx%d.png", name, w.kind, w.width, w.height), w.width, w.height, true)
		if got := tb.eval(wrapProblemsJS); got != "" {
			tb.t.Errorf("%s at %d px:\n%s", name, w.width, got)
		}
		if sw := tb.eval(`document.documentElement.scrollWidth`); sw != fmt.Sprint(w.width) {
			tb.t.Errorf("%s at %d px: the page is %s px wide, it scrolls sideways", name, w.width, sw)
		}
		table, box := tb.eval(`document.querySelector(".table-wrap").scrollWidth`), tb.eval(`document.querySelector(".table-wrap").clientWidth`)
		if fits && table != box {
			tb.t.Errorf("%s at %d px: the table is %s px wide in a box of %s, it scrolls sideways", name, w.width, table, box)
		}
		tb.t.Logf("%s at %d px: the longest tag name cut with an ellipsis: %s; the table %s px wide in a box of %s", name, w.width,
			tb.eval(fmt.Sprintf(`(() => { const el = document.querySelector('tr[data-tag=%q] .tag'); return el.scrollWidth > el.clientWidth; })()`, glanceTag)),
			table, box)
	}
	tb.run("back to desktop width", chromedp.EmulateViewport(1280, 800))
}
