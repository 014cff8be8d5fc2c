// idalloc monitor: polls GET /status once a second and draws it. Plain
// JavaScript, no framework, no build step. It asks for one page of tags
// at a time (?limit=), filtered by a prefix, by name or busiest first;
// Next passes the page's "next" as ?after=, Previous goes back to the
// "after" it came from.
//
// Every ID and count of IDs arrives as a string of digits and is handled
// as a BigInt or a string, never as a Number: int64 values above 2^53
// would be rounded. The admin token, when the instance needs one, lives in
// the variable below only: not in storage, a cookie or a URL.
"use strict";
(() => {
  const POLL_MS = 1000;
  const TIMEOUT_MS = 4000;
  const PAGE = 100;
  const PREFIX = /^[A-Za-z0-9_.:-]{0,64}$/; // the start of a tag

  let token = "";
  let needToken = false;
  let timer = 0;
  let inFlight = false;
  let again = false; // the view changed during a poll: poll again at once
  let tagOrder = "";
  // The page shown: afters holds the ?after= of each page from the first,
  // the last being this one's; next is this page's "next".
  const view = { prefix: "", busiest: false, afters: [""], next: null };
  const rows = new Map(); // app_tag -> {tr, cells}
  const prev = new Map(); // app_tag -> {issued: BigInt, at: ms}, for IDs/s

  const $ = (id) => document.getElementById(id);
  const nf = new Intl.NumberFormat("en-US");
  const big = (s) => { try { return BigInt(s); } catch { return 0n; } };
  const group = (s) => nf.format(big(s));
  // count is a count of IDs or events in words when there is none: a bare
  // 0 reads as a figure missing.
  const count = (s, none) => big(s) === 0n ? none : group(s);
  const SVG = "http://www.w3.org/2000/svg";
  const NBSP = "\u00a0"; // between a figure and its unit: never a line apart

  function setText(el, text) {
    if (el.textContent !== text) el.textContent = text;
  }

  function authHeaders() {
    return token ? { Authorization: "Bearer " + token } : {};
  }

  async function getJSON(path, headers) {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), TIMEOUT_MS);
    try {
      const res = await fetch(path, { headers, cache: "no-store", credentials: "omit", signal: ctl.signal });
      return { status: res.status, body: await res.json() };
    } finally {
      clearTimeout(t);
    }
  }

  function schedule(ms) {
    clearTimeout(timer);
    if (!needToken) timer = setTimeout(poll, ms);
  }

  function statusURL() {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (view.prefix) q.set("prefix", view.prefix);
    const after = view.afters[view.afters.length - 1];
    if (after) q.set("after", after);
    if (view.busiest) q.set("sort", "busiest");
    return "/status?" + q;
  }

  async function poll() {
    if (inFlight) return;
    if (document.hidden) { schedule(POLL_MS); return; } // resumed on visibilitychange
    inFlight = true;
    try {
      const url = statusURL();
      const { status, body } = await getJSON(url, authHeaders());
      if (status === 401) {
        askToken(token ? body.msg : "");
        return;
      }
      if (body.resp_code !== 0) {
        showState("gone", "error: " + body.msg);
        return;
      }
      if (url === statusURL()) render(body); // else the view changed meanwhile: poll again
    } catch (e) {
      showState("gone", "no answer from this instance");
    } finally {
      inFlight = false;
      schedule(again ? 0 : POLL_MS);
      again = false;
    }
  }

  // refresh polls for a new view at once, or right after the poll under way.
  function refresh() {
    if (inFlight) again = true;
    else schedule(0);
  }

  function toPage(afters) {
    view.afters = afters;
    view.next = null;
    $("prev").disabled = $("next").disabled = true;
    refresh();
  }

  function askToken(msg) {
    needToken = true;
    token = "";
    clearTimeout(timer);
    $("login").hidden = false;
    $("tags-section").hidden = true;
    $("snowflake").hidden = true;
    $("forget").hidden = true;
    setText($("login-error"), msg ? "Refused: " + msg : "");
    showState("wait", "admin token required");
    $("token").focus();
  }

  const STATES = {
    ok: "ok",
    degraded: "degraded: store unreachable, serving buffered IDs",
    unavailable: "unavailable: store unreachable, nothing buffered",
    draining: "draining: shutting down, finishing requests",
  };

  function showState(kind, text) {
    const el = $("state");
    el.className = "state state-" + kind;
    setText($("state-text"), text);
  }

  function render(s) {
    needToken = false;
    $("login").hidden = true;
    $("tags-section").hidden = false;
    $("snowflake").hidden = false;
    $("forget").hidden = !token;
    showState(s.status in STATES ? s.status : "gone", STATES[s.status] || s.status);
    setText($("store"), s.store_reachable ? "reachable" : "unreachable");
    $("store").className = s.store_reachable ? "" : "bad";
    setText($("drain"), s.draining ? "draining" : "no");
    setText($("total"), count(s.buffered, "none"));
    const now = Date.parse(s.now);
    setText($("updated"), new Date(now).toLocaleTimeString());
    renderTags(s.tags, now, historyOf(s));
    renderPager(s);
    renderSnowflake(s.snowflake);
  }

  function renderPager(s) {
    const shown = s.tags.length;
    if (shown === 0 && view.afters.length > 1) { // its tags are gone: the page before
      toPage(view.afters.slice(0, -1));
      return;
    }
    view.next = s.next;
    $("next").disabled = !s.next;
    $("prev").disabled = view.afters.length === 1;
    const from = (view.afters.length - 1) * PAGE;
    setText($("page-info"), shown === 0 ? "" : nf.format(from + 1) + "–" + nf.format(from + shown) + " of " + nf.format(s.total));
    setText($("tag-count"), s.total === 0 ? "" : "(" + nf.format(s.total) + (view.prefix ? " starting with " + view.prefix : "") + ")");
    setText($("no-tags"), view.prefix ? "No tag starts with " + view.prefix + "." : "No tags yet: create one with POST /tags.");
    $("no-tags").hidden = s.total > 0;
  }

  const COLS = [
    ["tag", "Tag"], ["format", "Format"], ["buffered", "Buffered"], ["step", "Step / current"],
    ["issued", "Issued"], ["rate", "IDs/s, last 5 min"], ["maxid", "max_id"], ["fetch", "Last fetch"], ["waste", "Given back / wasted"],
  ];
  const NUMERIC = new Set(["step", "issued", "rate", "maxid", "waste"]);

  function makeRow(tag) {
    const tr = document.createElement("tr");
    tr.dataset.tag = tag;
    const cells = {};
    for (const [key, label] of COLS) {
      const td = document.createElement("td");
      td.dataset.label = label;
      td.className = "c-" + key + (NUMERIC.has(key) ? " num" : "") + (key === "tag" ? " tag-cell" : "");
      tr.appendChild(td);
      cells[key] = td;
    }
    // A long name is cut with an ellipsis, never broken: the whole of it
    // is its title.
    const name = document.createElement("span");
    name.className = "tag";
    name.textContent = tag;
    name.title = tag;
    cells.tag.appendChild(name);

    // The format, and a dated tag's shape and current period under it.
    cells.formatMain = document.createElement("span");
    cells.formatShape = document.createElement("span");
    cells.formatShape.className = "sub tnum c-dated-shape";
    cells.formatPeriod = document.createElement("span");
    cells.formatPeriod.className = "sub c-dated-period";
    const fmt = document.createElement("div");
    fmt.append(cells.formatMain, cells.formatShape, cells.formatPeriod);
    cells.format.appendChild(fmt);

    const bars = document.createElement("div");
    bars.className = "bars";
    bars.setAttribute("role", "img");
    for (const kind of ["cur", "pre"]) {
      const bar = document.createElement("span");
      bar.className = "bar bar-" + kind;
      const fill = document.createElement("span");
      fill.className = "fill";
      bar.appendChild(fill);
      bars.appendChild(bar);
      cells[kind + "Fill"] = fill;
    }
    const nums = document.createElement("span");
    nums.className = "sub tnum c-buffered-text";
    // One wrapper per cell: at phone width each cell is a two-column grid
    // of its label and its value.
    const buf = document.createElement("div");
    buf.append(bars, nums);
    cells.buffered.appendChild(buf);
    cells.bars = bars;
    cells.bufText = nums;

    cells.fetchWhen = document.createElement("span");
    cells.fetchSub = document.createElement("span");
    cells.fetchSub.className = "sub";
    const fetch = document.createElement("div");
    fetch.append(cells.fetchWhen, cells.fetchSub);
    cells.fetch.appendChild(fetch);

    // The rate now, the last minutes' as a sparkline, the refills under it.
    cells.rateNow = document.createElement("span");
    cells.rateNow.className = "c-rate-now";
    cells.spark = makeSpark();
    cells.refills = document.createElement("span");
    cells.refills.className = "sub c-refills";
    const rate = document.createElement("div");
    rate.append(cells.rateNow, cells.spark.svg, cells.refills);
    cells.rate.appendChild(rate);

    // max_id, and before this instance's first fetch the row's under it.
    cells.maxMain = document.createElement("span");
    cells.maxMain.className = "c-maxid-main";
    cells.maxSub = document.createElement("span");
    cells.maxSub.className = "sub c-maxid-sub";
    const maxid = document.createElement("div");
    maxid.append(cells.maxMain, cells.maxSub);
    cells.maxid.appendChild(maxid);
    return { tr, cells };
  }

  // A sparkline: an inline SVG of SPARK_W × SPARK_H user units, the rate
  // as a line over a filled area, each step with a refill marked by a
  // tick under it. Drawn by this script: no library, nothing fetched.
  const SPARK_W = 120, SPARK_H = 28, SPARK_LINE = 22;

  function makeSpark() {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("viewBox", "0 0 " + SPARK_W + " " + SPARK_H);
    svg.setAttribute("preserveAspectRatio", "none");
    svg.setAttribute("role", "img");
    const title = document.createElementNS(SVG, "title");
    const area = document.createElementNS(SVG, "path");
    area.setAttribute("class", "spark-area");
    const line = document.createElementNS(SVG, "path");
    line.setAttribute("class", "spark-line");
    const ticks = document.createElementNS(SVG, "path");
    ticks.setAttribute("class", "spark-refill");
    svg.append(title, area, line, ticks);
    return { svg, title, area, line, ticks, key: "" };
  }

  // historyOf is what every row's sparkline shares: how long a step is,
  // and when the last one ended.
  function historyOf(s) {
    return { step: s.history_step_seconds || 10, ends: s.history_ends_at ? Date.parse(s.history_ends_at) : 0 };
  }

  const fmtRate = (r) => r === 0 ? "idle" : r < 0.1 ? "<" + NBSP + "0.1" : r < 10 ? r.toFixed(1) : nf.format(Math.round(r));

  // drawSpark draws a tag's history (null: nothing issued nor refilled in
  // the window) and returns its refills in all.
  function drawSpark(sp, h, hist) {
    const rates = h ? h.ids_per_second : [];
    const refills = h ? h.refills : [];
    const n = Math.max(rates.length, 1);
    const key = hist.ends + "|" + rates.join() + "|" + refills.join();
    let total = 0;
    for (const r of refills) total += r;
    if (key === sp.key) return total;
    sp.key = key;
    const peak = Math.max(0, ...rates);
    const dx = SPARK_W / n;
    let line = "";
    rates.forEach((r, i) => {
      const y = peak > 0 ? SPARK_LINE - (r / peak) * (SPARK_LINE - 2) : SPARK_LINE;
      line += (i ? " L" : "M") + (i * dx).toFixed(1) + " " + y.toFixed(1) + " H" + ((i + 1) * dx).toFixed(1);
    });
    if (!line) line = "M0 " + SPARK_LINE + " H" + SPARK_W;
    sp.line.setAttribute("d", line);
    sp.area.setAttribute("d", peak > 0 ? line + " V" + SPARK_LINE + " H0 Z" : "");
    let ticks = "";
    refills.forEach((c, i) => { if (c > 0) ticks += "M" + ((i + 0.5) * dx).toFixed(1) + " " + (SPARK_LINE + 1) + " V" + SPARK_H; });
    sp.ticks.setAttribute("d", ticks);
    sp.svg.classList.toggle("spark-idle", peak === 0);
    const mins = Math.round(n * hist.step / 60);
    const to = hist.ends ? " to " + new Date(hist.ends).toLocaleTimeString() : "";
    const text = peak === 0 ? "no ID issued in the last " + mins + " min" + to :
      "IDs/s over the last " + mins + " min" + to + ", " + hist.step + " s a step: peak " + fmtRate(peak) +
      (total ? ", " + total + (total === 1 ? " refill" : " refills") : "");
    sp.title.textContent = text;
    sp.svg.setAttribute("aria-label", text);
    return total;
  }

  function pct(part, whole) {
    const w = big(whole);
    if (w <= 0n) return "0%";
    return Number((big(part) * 1000n) / w) / 10 + "%";
  }

  // span is a duration in words, its two largest units, without a unit
  // that is 0 ("2 min", not "2 min 0 s").
  function span(s) {
    const parts = s < 60 ? [[s, "s"]] : s < 3600 ? [[Math.floor(s / 60), "min"], [s % 60, "s"]] :
      s < 172800 ? [[Math.floor(s / 3600), "h"], [Math.floor((s % 3600) / 60), "min"]] : [[Math.floor(s / 86400), "days"]];
    return parts.filter(([n], i) => i === 0 || n > 0).map(([n, u]) => n + NBSP + u).join(" ");
  }

  function ago(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    return s === 0 ? "just now" : span(s) + " ago";
  }

  function until(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    return s === 0 ? "under a second" : span(s);
  }

  // A dated tag's IDs (docs/api.md §11): prefix, separator, stamp, separator,
  // sequence, as "ORD-yyyyMMdd-nnnnnn".
  const STAMP = { year: "yyyy", month: "yyyyMM", day: "yyyyMMdd", hour: "yyyyMMddHH", minute: "yyyyMMddHHmm" };

  function datedShape(t) {
    const sep = t.separator || "";
    return (t.prefix ? t.prefix + sep : "") + (STAMP[t.period] || t.period) + sep + "n".repeat(Math.max(0, t.length));
  }

  function datedPeriod(t, now) {
    const p = t.current_period;
    if (!p) return "no ID yet in this instance";
    const ends = Date.parse(p.ends_at);
    const when = now < ends ? "ends in " + until(ends - now) : "ended; the next ID starts the next";
    return "period " + p.stamp + ": " + count(p.issued, "none") + " issued here, " + count(p.left, "none") + " left · " + when;
  }

  function renderFormat(c, t, now) {
    const isDated = t.format === "dated" && "period" in t;
    setText(c.formatMain, t.format + (isDated ? " · " + t.period + ", " + t.time_zone :
      t.length > 0 ? " · " + t.length + " digits" : ""));
    setText(c.formatShape, isDated ? datedShape(t) : "");
    setText(c.formatPeriod, isDated ? datedPeriod(t, now) : "");
    c.formatShape.hidden = c.formatPeriod.hidden = !isDated;
    // A spent period answers period_exhausted until the next begins.
    c.formatPeriod.classList.toggle("bad", isDated && !!t.current_period && big(t.current_period.left) === 0n);
  }

  // rate is the IDs a second since the last refresh, "idle" for none; a
  // tag seen once has none yet.
  function rate(t, now) {
    const issued = big(t.issued);
    const p = prev.get(t.app_tag);
    prev.set(t.app_tag, { issued, at: now });
    if (!p || now <= p.at || issued < p.issued) return "–";
    return fmtRate(Number(issued - p.issued) / ((now - p.at) / 1000));
  }

  // took is a fetch's duration: under 0.01 ms a local store's, not 0.
  const msf = new Intl.NumberFormat("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  const took = (ms) => ms < 0.01 ? "<" + NBSP + "0.01" + NBSP + "ms" : msf.format(ms) + NBSP + "ms";

  function renderTags(tags, now, hist) {
    const body = document.querySelector("#tags tbody");
    const seen = new Set();
    for (const t of tags) {
      seen.add(t.app_tag);
      let row = rows.get(t.app_tag);
      if (!row) {
        row = makeRow(t.app_tag);
        rows.set(t.app_tag, row);
      }
      const c = row.cells;
      // No fetch yet on this instance (of a dated tag's current period):
      // nothing buffered, no adaptive step, and max_id is the row's.
      const fetched = !!t.last_fetch;
      renderFormat(c, t, now);
      c.curFill.style.width = pct(t.current_left, t.current_size);
      c.preFill.style.width = big(t.prefetched) > 0n ? "100%" : "0%";
      const pre = big(t.prefetched) > 0n ? group(t.prefetched) : t.fetching ? "fetching…" : "none";
      const buffered = big(t.current_size) > 0n ? group(t.current_left) + " of " + group(t.current_size) + " · next " + pre :
        fetched ? "nothing left · next " + pre : t.fetching ? "nothing yet · fetching…" : "nothing yet";
      setText(c.bufText, buffered);
      c.bars.setAttribute("aria-label", big(t.current_size) > 0n ? "current segment " + group(t.current_left) + " of " +
        group(t.current_size) + " IDs left; prefetched segment " + pre : "nothing buffered");
      setText(c.step, group(t.step) + " / " + count(t.current_step, "none yet"));
      c.step.title = big(t.current_step) === 0n ? "the adaptive step starts at the first fetch" : "";
      setText(c.issued, count(t.issued, "none yet"));
      setText(c.rateNow, rate(t, now));
      const refills = drawSpark(c.spark, t.history, hist);
      setText(c.refills, refills === 0 ? "no refill" : refills === 1 ? "1 refill" : refills + " refills");
      setText(c.maxMain, fetched ? group(t.max_id) : "not fetched here yet");
      setText(c.maxSub, !fetched && big(t.max_id) > 0n ? "store: " + group(t.max_id) : "");
      c.maxSub.hidden = c.maxSub.textContent === "";
      setText(c.fetchWhen, fetched ? ago(now - Date.parse(t.last_fetch)) : "never");
      const sub = (fetched ? "took " + took(t.last_fetch_ms) : "") +
        (t.fetch_failing ? " · failing" : t.fetching ? " · fetching…" : "");
      setText(c.fetchSub, sub);
      c.fetchSub.classList.toggle("bad", t.fetch_failing);
      row.tr.classList.toggle("failing", t.fetch_failing);
      setText(c.waste, big(t.given_back) === 0n && big(t.wasted) === 0n ? "none" : group(t.given_back) + " / " + group(t.wasted));
    }
    for (const [tag, row] of rows) {
      if (!seen.has(tag)) {
        row.tr.remove();
        rows.delete(tag);
        prev.delete(tag);
      }
    }
    // Reorder only when the list changed: moving 1,000 rows every second
    // would relayout the page for nothing.
    const order = tags.map((t) => t.app_tag).join("\n");
    if (order !== tagOrder) {
      tagOrder = order;
      for (const t of tags) body.appendChild(rows.get(t.app_tag).tr);
    }
  }

  function renderSnowflake(sf) {
    const l = sf.lease;
    const waiting = l && l.held && l.opens_in_seconds > 0;
    setText($("sf-mode"), !sf.enabled ? "disabled" : !l || !l.held ? "enabled, no worker ID held" + (l && l.waiting ? ": " + l.waiting : "") :
      waiting ? "waiting " + l.opens_in_seconds.toFixed(1) + " s: the lease store had no record of this worker ID (new, or forgotten), so any earlier holder must fence itself first" :
      "enabled");
    setText($("sf-cluster"), l && l.held ? l.cluster : "–");
    setText($("sf-worker"), l && l.held ? l.worker_id + " (max " + l.max_worker_id + ")" : "–");
    renderLease(l);
    setText($("sf-issued"), count(sf.issued, "none yet"));
    setText($("sf-waited"), sf.drift.waited ? nf.format(sf.drift.waited) : "none");
    setText($("sf-trylater"), sf.drift.try_later ? nf.format(sf.drift.try_later) : "none");
    setText($("sf-toolarge"), sf.drift.too_large ? nf.format(sf.drift.too_large) : "none");
  }

  // renderLease shows the time the lease is still held for as a bar,
  // lease_ttl its full width: green while renewals come on time (every
  // third of the TTL), amber once one is late (half the TTL left), red
  // from a quarter.
  function renderLease(l) {
    const held = !!(l && l.held);
    $("sf-lease").hidden = !held;
    const ttl = held ? l.ttl_seconds : 0;
    const left = held ? Math.max(0, Math.min(l.seconds_left, ttl)) : 0;
    const share = ttl > 0 ? left / ttl : 0;
    const level = share > 0.5 ? "ok" : share > 0.25 ? "warn" : "bad";
    const secs = (x) => (Number.isInteger(x) ? String(x) : x.toFixed(1)) + NBSP + "s";
    $("sf-lease").className = "lease lease-" + level;
    $("sf-lease-fill").style.width = (share * 100).toFixed(1) + "%";
    setText($("sf-expires-text"), !held ? "–" : left === 0 ? "lapsed" : left.toFixed(1) + NBSP + "s of " + secs(ttl));
    $("sf-lease").setAttribute("aria-label", held ? "lease held for " + left.toFixed(1) + " s more, of a " + secs(ttl) + " lease" : "");
    $("sf-expires").title = held ? "expires_at " + l.expires_at + " (store's clock); lease_ttl " + ttl + " s" : "";
  }

  function login(ev) {
    ev.preventDefault(); // never submitted: the token must not reach a URL
    const input = $("token");
    token = input.value;
    input.value = "";
    if (!token) return;
    needToken = false;
    setText($("login-error"), "");
    showState("wait", "checking token…");
    poll();
  }

  let filterTimer = 0;

  function filter() {
    const v = $("filter").value.trim();
    clearTimeout(filterTimer);
    if (!PREFIX.test(v)) {
      setText($("filter-error"), "A prefix is the start of a tag: up to 64 of A-Z a-z 0-9 _ . : -");
      return;
    }
    setText($("filter-error"), "");
    // Once typing pauses: a poll per key would page through every prefix.
    filterTimer = setTimeout(() => {
      if (v === view.prefix) return;
      view.prefix = v;
      toPage([""]);
    }, 250);
  }

  function forget() {
    for (const row of rows.values()) row.tr.remove();
    rows.clear();
    prev.clear();
    tagOrder = "";
    askToken("");
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", login);
    $("forget").addEventListener("click", forget);
    $("filter").addEventListener("input", filter);
    $("busiest").addEventListener("change", () => { view.busiest = $("busiest").checked; toPage([""]); });
    $("next").addEventListener("click", () => { if (view.next) toPage([...view.afters, view.next]); });
    $("prev").addEventListener("click", () => { if (view.afters.length > 1) toPage(view.afters.slice(0, -1)); });
    document.addEventListener("visibilitychange", () => { if (!document.hidden) schedule(0); });
    poll();
  });
})();
