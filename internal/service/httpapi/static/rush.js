// The rush: run by the service (POST /api/rush), followed here by polling
// GET /api/rush and drawn as a table and a small live chart.
"use strict";

const rushColors = { watch: "#b45309", coarse: "#7c3aed", fine: "#2563eb", lua: "#15803d" };
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// One number format per column: whole counts, rates and per-purchase
// figures with one decimal, waits with two; thousands separated.
const fixed = (d) => (x) => Number(x).toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
const dec1 = fixed(1);
const dec2 = fixed(2);

// lostOf is how many purchases found their listing already bought (or
// repriced) by another buyer; the rest of the failures are counted apart.
const lostOf = (s) => s.lost_to_another_buyer;

function rushRowOf(s) {
  let row = document.getElementById("rush-" + s.strategy);
  if (!row) {
    const td = (cls) => el("td", { class: cls });
    row = el("tr", { id: "rush-" + s.strategy },
      el("td", { class: "strat" }, el("span", { class: "swatch" }), el("span", { class: "name", text: s.strategy })),
      td("num bought"), td("num rate"), td("num retries"), td("num lockwaits"), td("num waits"),
      td("num samples"), td("num lost"), td("num audit"));
    row.querySelector(".swatch").style.background = rushColors[s.strategy] || "#666";
    $("#rush-results tbody").append(row);
  }
  return row;
}

function renderRushRow(s) {
  const row = rushRowOf(s);
  row.className = "state-" + s.state;
  row.dataset.state = s.state;
  const set = (cls, text) => { row.querySelector("." + cls).textContent = text; };
  const started = s.state !== "pending";
  set("bought", started ? fmt(s.bought) : "–");
  set("rate", started ? dec1(s.purchases_per_s) : "–");
  set("retries", started && s.bought > 0 ? dec1(s.retries_per_purchase) : "–");
  set("lockwaits", started && s.bought > 0 ? dec1(s.lock_waits_per_purchase) : "–");
  set("waits", s.wait_samples > 0 ? `${dec2(s.p50_wait_ms)} / ${dec2(s.p99_wait_ms)}` : "–");
  set("samples", s.wait_samples > 0 ? fmt(s.wait_samples) : "–");
  set("lost", started ? fmt(lostOf(s)) : "–");
  set("audit", s.state === "done" ? (s.audit_violations === 0 ? "ok" : `${s.audit_violations} violations`) : "–");
}

// drawRushChart draws purchases per second over each strategy's own run,
// large enough to read from the back of a room.
function drawRushChart(st) {
  const svg = $("#rush-chart");
  const W = 1200, H = 440, L = 110, R = 170, T = 56, B = 62;
  const FS = 24; // label size in viewBox units, drawn at the page's full width
  const xMax = Math.max(st.strategy_duration_ms || 1000, 1) / 1000;
  let yMax = 1;
  for (const s of st.strategies) for (const p of s.series) yMax = Math.max(yMax, p.purchases_per_s);
  yMax = niceCeil(yMax);
  const x = (t) => L + (t / xMax) * (W - L - R);
  const y = (v) => T + (1 - v / yMax) * (H - T - B);
  const parts = [svgEl("rect", { x: 0, y: 0, width: W, height: H, fill: "#fff" })];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    parts.push(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#d5dbe1", "stroke-width": 1.5 }));
    parts.push(svgEl("text", { x: L - 12, y: y(v) + FS / 3, "text-anchor": "end", "font-size": FS, fill: "#475569" }, fmt(Math.round(v))));
  }
  for (let i = 0; i <= 4; i++) {
    const t = (xMax * i) / 4;
    parts.push(svgEl("text", { x: x(t), y: H - 22, "text-anchor": "middle", "font-size": FS, fill: "#475569" }, t.toFixed(1) + " s"));
  }
  parts.push(svgEl("text", { x: 12, y: 34, "font-size": FS + 2, "font-weight": 600, fill: "#1f2933" },
    "purchases per second, each strategy from its own start"));
  st.strategies.forEach((s, i) => {
    const col = rushColors[s.strategy] || "#666";
    if (s.series.length > 0) {
      const pts = [[0, 0], ...s.series.map((p) => [p.t_ms / 1000, p.purchases_per_s])];
      parts.push(svgEl("polyline", { points: pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        fill: "none", stroke: col, "stroke-width": 5, "stroke-linejoin": "round", "data-strategy": s.strategy }));
    }
    const ly = T + 10 + i * 44;
    parts.push(svgEl("rect", { x: W - R + 24, y: ly, width: 26, height: 26, rx: 4, fill: col }));
    parts.push(svgEl("text", { x: W - R + 60, y: ly + 22, "font-size": FS + 4, "font-weight": 600, fill: "#1f2933" }, s.strategy));
  });
  svg.replaceChildren(...parts);
}

// rushSlices is how many equal parts of its run a strategy's purchases
// per second are told in, for their range.
const rushSlices = 5;

// sliceRange is a strategy's purchases per second in each fifth of its
// run (from the series, each interval weighted by its length), as
// {lo, hi, n}: the lowest, the highest and how many parts had points.
function sliceRange(s, perMs) {
  const sums = new Array(rushSlices).fill(0), lens = new Array(rushSlices).fill(0);
  let prev = 0;
  for (const p of s.series) {
    const dt = p.t_ms - prev;
    if (dt > 0 && perMs > 0) {
      const i = Math.min(rushSlices - 1, Math.floor(((prev + dt / 2) / perMs) * rushSlices));
      sums[i] += p.purchases_per_s * dt;
      lens[i] += dt;
    }
    prev = p.t_ms;
  }
  const rates = [];
  for (let i = 0; i < rushSlices; i++) if (lens[i] > 0) rates.push(sums[i] / lens[i]);
  if (rates.length === 0) return { lo: 0, hi: 0, n: 0 };
  return { lo: Math.min(...rates), hi: Math.max(...rates), n: rates.length };
}

const rangeText = (r) => (r.n > 1 ? `${dec1(r.lo)}–${dec1(r.hi)}/s` : "no spread");

// rushReading sums a finished (or cancelled) rush up in sentences
// computed from its figures. A strategy is named the one that bought the
// most only when its slowest fifth beat every other strategy's fastest:
// a difference within that spread is noise the reading cannot tell from
// a real one. On miniredis, which serves one command at a time inside the
// service, it draws no verdict at all.
function rushReading(st) {
  const done = st.strategies.filter((s) => s.state === "done" || (s.state === "cancelled" && s.bought > 0));
  if (done.length === 0) return "";
  if (st.redis === "miniredis") {
    return "On the embedded miniredis, which serves one command at a time inside the service, these " +
      "figures are illustrative only: no verdict is drawn from them. Start the service on redis-server to compare the strategies.";
  }
  const by = Object.fromEntries(done.map((s) => [s.strategy, s]));
  const range = Object.fromEntries(done.map((s) => [s.strategy, sliceRange(s, st.strategy_duration_ms)]));
  const best = done.reduce((a, b) => (b.bought > a.bought ? b : a));
  const out = [];
  const others = done.filter((s) => s !== best);
  const clear = (a, b) => range[a.strategy].n > 1 && range[b.strategy].n > 1 && range[a.strategy].lo > range[b.strategy].hi;
  if (best.bought === 0) {
    out.push("No strategy bought anything.");
  } else if (others.length > 0) {
    const close = others.filter((s) => !clear(best, s));
    const cmp = others.map((s) => (s.bought > 0 ? `${dec1(best.bought / s.bought)}× ${s.strategy}` : `${s.strategy} bought nothing`));
    if (close.length === 0) {
      out.push(`${best.strategy} bought the most (${fmt(best.bought)}): ${cmp.join(", ")}; its slowest fifth of the run beat every other strategy's fastest.`);
    } else {
      out.push(`The rush cannot tell ${best.strategy} (${fmt(best.bought)} bought, ${rangeText(range[best.strategy])} over the fifths of its run) from ` +
        close.map((s) => `${s.strategy} (${fmt(s.bought)}, ${rangeText(range[s.strategy])})`).join(" or ") +
        ": the difference lies within their spread. Run it longer, or on a quieter machine; the strategies run one after the other, " +
        "so simulate -rounds measures them in turns.");
    }
  }
  const rtt = st.rtt_ms > 0 ? `a round trip ${dec2(st.measured_rtt_ms)} ms long (${dec2(st.rtt_ms)} ms added)` : `a round trip of ${dec2(st.measured_rtt_ms)} ms`;
  const w = by.watch;
  if (w) {
    if (w.bought === 0) {
      out.push(`WATCH bought nothing: ${fmt(w.retries)} EXECs were aborted, because with ${st.buyers} buyers and ${st.listers} listers ` +
        `writing, something always changed between its reads and its EXEC (${rtt}).`);
    } else if (w.retries_per_purchase >= 1) {
      out.push(`WATCH retried ${dec1(w.retries_per_purchase)} times per purchase because every purchase or listing that lands ` +
        `between its reads and its EXEC aborts the EXEC, and with ${st.buyers} buyers, ${st.listers} listers and ${rtt} that window is seldom quiet.`);
    } else {
      out.push(`WATCH retried only ${dec1(w.retries_per_purchase)} times per purchase: with ${rtt}, the window between its reads ` +
        `and its EXEC is short, so most EXECs commit.`);
    }
    const c = by.coarse;
    if (st.rtt_ms === 0 && c && c.bought > 0 && !clear(c, w)) {
      out.push(`With no round trip added WATCH ${clear(w, c) ? "outsells" : "keeps up with"} the coarse lock; ` +
        "run again with a round trip of 2 ms to see it collapse.");
    }
  }
  const c = by.coarse;
  if (c && c.bought > 0 && c.lock_waits_per_purchase >= 1) {
    out.push(`The coarse lock made each purchase wait ${dec1(c.lock_waits_per_purchase)} times for the one market-wide lock: one purchase at a time.`);
  }
  const lost = lostOf(best);
  if (lost > 0) {
    out.push(`${fmt(lost)} of ${best.strategy}'s purchases were lost to another buyer (the listing was sold first): buyers competing, not errors.`);
  }
  return out.join(" ");
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function renderRushStatus(st) {
  for (const s of st.strategies) renderRushRow(s);
  drawRushChart(st);
  $("#rush-reading").textContent = st.state === "running" ? "" : rushReading(st);
  const other = st.strategies.filter((s) => s.failures && s.failed > lostOf(s))
    .map((s) => `${s.strategy}: ${fmt(s.failed - lostOf(s))} purchases failed for another reason ` +
      `(lock or transaction not had in time: ${fmt(s.failures.contended)}; funds: ${fmt(s.failures.insufficient_funds)}; other: ${fmt(s.failures.other)})`);
  $("#rush-other").textContent = other.join("; ");
  const status = $("#rush-status");
  const running = st.strategies.find((s) => s.state === "running");
  if (st.state === "running") {
    status.textContent = running ? `running ${running.strategy}: ${(running.elapsed_ms / 1000).toFixed(1)} of ${(st.strategy_duration_ms / 1000).toFixed(1)} s`
      : "running…";
  } else if (st.state === "idle") {
    status.textContent = "idle";
  } else {
    status.textContent = st.state + (st.error ? ": " + st.error : "") +
      ` (${st.buyers} buyers, ${st.listers} listers, ${(st.strategy_duration_ms / 1000).toFixed(1)} s per strategy, ` +
      `round trip ${dec2(st.measured_rtt_ms)} ms` + (st.rtt_ms > 0 ? ` with ${dec2(st.rtt_ms)} ms added)` : ")");
  }
  status.dataset.state = st.state;
  $("#rush-run").disabled = st.state === "running";
  $("#rush-cancel").disabled = st.state !== "running";
}

let rushTimer = null;

async function pollRush() {
  try {
    const st = await api("GET", "/api/rush");
    renderRushStatus(st);
    if (st.state === "running") {
      rushTimer = setTimeout(pollRush, 500);
      return;
    }
  } catch (e) {
    showError("rush", e);
  }
  rushTimer = null;
}

async function startRush(ev) {
  ev.preventDefault();
  const strategies = [...document.querySelectorAll("input[name=rush-strategy]:checked")].map((i) => i.value);
  const body = {
    buyers: Number($("#rush-buyers").value),
    listers: Number($("#rush-listers").value),
    duration_ms: Math.round(Number($("#rush-seconds").value) * 1000),
    rtt_ms: Number($("#rush-rtt").value),
    strategies,
  };
  try {
    const st = await api("POST", "/api/rush", body);
    $("#rush-results tbody").replaceChildren();
    renderRushStatus(st);
    if (rushTimer === null) rushTimer = setTimeout(pollRush, 300);
  } catch (e) {
    showError("starting the rush", e);
  }
}

async function cancelRush() {
  $("#rush-cancel").disabled = true;
  try {
    renderRushStatus(await api("DELETE", "/api/rush"));
  } catch (e) {
    showError("cancelling the rush", e);
  }
}

$("#rush-form").addEventListener("submit", startRush);
$("#rush-cancel").addEventListener("click", cancelRush);
pollRush();
