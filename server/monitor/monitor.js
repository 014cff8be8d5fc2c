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
    setText($("total"), group(s.buffered));
    const now = Date.parse(s.now);
    setText($("updated"), new Date(now).toLocaleTimeString());
    renderTags(s.tags, now);
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
    setText($("tag-count"), "(" + nf.format(s.total) + (view.prefix ? " starting with " + view.prefix : "") + ")");
    setText($("no-tags"), view.prefix ? "No tag starts with " + view.prefix + "." : "No tags yet: create one with POST /tags.");
    $("no-tags").hidden = s.total > 0;
  }

  const COLS = [
    ["tag", "Tag"], ["format", "Format"], ["buffered", "Buffered"], ["step", "Step / current"],
    ["issued", "Issued"], ["rate", "IDs/s"], ["maxid", "max_id"], ["fetch", "Last fetch"], ["waste", "Given back / wasted"],
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
    const name = document.createElement("span");
    name.className = "tag";
    name.textContent = tag;
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
    return { tr, cells };
  }

  function pct(part, whole) {
    const w = big(whole);
    if (w <= 0n) return "0%";
    return Number((big(part) * 1000n) / w) / 10 + "%";
  }

  function ago(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + " s ago";
    if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s ago";
    return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min ago";
  }

  function until(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
    if (s < 172800) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    return Math.floor(s / 86400) + " days";
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
    return "period " + p.stamp + ": " + group(p.issued) + " issued here, " + group(p.left) + " left · " + when;
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

  function rate(t, now) {
    const issued = big(t.issued);
    const p = prev.get(t.app_tag);
    prev.set(t.app_tag, { issued, at: now });
    if (!p || now <= p.at || issued < p.issued) return "–";
    const r = Number(issued - p.issued) / ((now - p.at) / 1000);
    return r < 10 ? r.toFixed(1) : nf.format(Math.round(r));
  }

  function renderTags(tags, now) {
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
      renderFormat(c, t, now);
      c.curFill.style.width = pct(t.current_left, t.current_size);
      c.preFill.style.width = big(t.prefetched) > 0n ? "100%" : "0%";
      const pre = big(t.prefetched) > 0n ? group(t.prefetched) : t.fetching ? "fetching…" : "none";
      setText(c.bufText, group(t.current_left) + " of " + group(t.current_size) + " · next " + pre);
      c.bars.setAttribute("aria-label", "current segment " + group(t.current_left) + " of " +
        group(t.current_size) + " IDs left; prefetched segment " + pre);
      setText(c.step, group(t.step) + " / " + group(t.current_step));
      setText(c.issued, group(t.issued));
      setText(c.rate, rate(t, now));
      setText(c.maxid, group(t.max_id));
      setText(c.fetchWhen, t.last_fetch ? ago(now - Date.parse(t.last_fetch)) : "never");
      const sub = (t.last_fetch ? "took " + t.last_fetch_ms.toFixed(2) + " ms" : "") +
        (t.fetch_failing ? " · failing" : t.fetching ? " · fetching…" : "");
      setText(c.fetchSub, sub);
      c.fetchSub.classList.toggle("bad", t.fetch_failing);
      row.tr.classList.toggle("failing", t.fetch_failing);
      setText(c.waste, group(t.given_back) + " / " + group(t.wasted));
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
    setText($("sf-expires"), l && l.held ? l.seconds_left.toFixed(1) + " s" : "–");
    $("sf-expires").title = l && l.held ? "expires_at " + l.expires_at + " (store's clock)" : "";
    setText($("sf-issued"), group(sf.issued));
    setText($("sf-waited"), nf.format(sf.drift.waited));
    setText($("sf-trylater"), nf.format(sf.drift.try_later));
    setText($("sf-toolarge"), nf.format(sf.drift.too_large));
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
