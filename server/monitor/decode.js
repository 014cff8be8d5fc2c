// idalloc monitor: decodes a pasted snowflake ID with GET /snowflake/{id},
// which needs no token. The ID stays a string from the field to the
// answer's id_str: a Number would round it above 2^53.
"use strict";
(() => {
  const TIMEOUT_MS = 4000;
  const $ = (id) => document.getElementById(id);

  async function decode(ev) {
    ev.preventDefault();
    const out = $("decoded");
    out.replaceChildren();
    const raw = $("decode-id").value.trim();
    const fail = (msg) => {
      const p = document.createElement("p");
      p.className = "error";
      p.textContent = msg;
      out.appendChild(p);
    };
    if (!/^[0-9]{1,19}$/.test(raw)) {
      fail("A snowflake ID is 1 to 19 digits.");
      return;
    }
    try {
      const res = await fetch("/snowflake/" + encodeURIComponent(raw),
        { cache: "no-store", credentials: "omit", signal: AbortSignal.timeout(TIMEOUT_MS) });
      const body = await res.json();
      if (body.resp_code !== 0) {
        fail(body.msg);
        return;
      }
      const dl = document.createElement("dl");
      dl.className = "pairs";
      for (const [k, v] of [["ID", body.id_str], ["Time (UTC)", body.time], ["Timestamp (ms)", String(body.timestamp_ms)],
        ["Worker ID", String(body.worker_id)], ["Sequence", String(body.sequence)]]) {
        const dt = document.createElement("dt");
        dt.textContent = k;
        const dd = document.createElement("dd");
        dd.className = "num";
        dd.textContent = v;
        if (k === "ID") dd.id = "decoded-id";
        dl.append(dt, dd);
      }
      out.appendChild(dl);
    } catch (e) {
      fail("No answer from this instance.");
    }
  }

  document.addEventListener("DOMContentLoaded", () => $("decode-form").addEventListener("submit", decode));
})();
