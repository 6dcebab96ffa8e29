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

const num2 = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));

function rushRowOf(s) {
  let row = document.getElementById("rush-" + s.strategy);
  if (!row) {
    const td = (cls) => el("td", { class: cls });
    row = el("tr", { id: "rush-" + s.strategy },
      el("td", { class: "strat" }, el("span", { class: "swatch" }), el("span", { class: "name", text: s.strategy })),
      td("num bought"), td("num rate"), td("num retries"), td("num lockwaits"), td("num waits"),
      td("num samples"), td("num failed"), td("num audit"));
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
  set("rate", started ? num2(s.purchases_per_s) : "–");
  set("retries", started && s.bought > 0 ? num2(s.retries_per_purchase) : "–");
  set("lockwaits", started && s.bought > 0 ? num2(s.lock_waits_per_purchase) : "–");
  set("waits", s.wait_samples > 0 ? `${ms(s.p50_wait_ms)} / ${ms(s.p99_wait_ms)}` : "–");
  set("samples", s.wait_samples > 0 ? fmt(s.wait_samples) : "–");
  set("failed", started ? fmt(s.failed) : "–");
  set("audit", s.state === "done" ? (s.audit_violations === 0 ? "ok" : `${s.audit_violations} violations`) : "–");
}

// drawRushChart draws purchases per second over each strategy's own run.
function drawRushChart(st) {
  const svg = $("#rush-chart");
  const W = 560, H = 200, L = 44, R = 90, T = 24, B = 28;
  const xMax = Math.max(st.strategy_duration_ms || 1000, 1) / 1000;
  let yMax = 1;
  for (const s of st.strategies) for (const p of s.series) yMax = Math.max(yMax, p.purchases_per_s);
  yMax = niceCeil(yMax);
  const x = (t) => L + (t / xMax) * (W - L - R);
  const y = (v) => T + (1 - v / yMax) * (H - T - B);
  const parts = [svgEl("rect", { x: 0, y: 0, width: W, height: H, fill: "#fff" })];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    parts.push(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: "#e3e7eb" }));
    parts.push(svgEl("text", { x: L - 6, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#67727e" }, Math.round(v)));
  }
  for (let i = 0; i <= 4; i++) {
    const t = (xMax * i) / 4;
    parts.push(svgEl("text", { x: x(t), y: H - 10, "text-anchor": "middle", "font-size": 11, fill: "#67727e" }, t.toFixed(1) + " s"));
  }
  parts.push(svgEl("text", { x: 6, y: 13, "font-size": 11, fill: "#67727e" }, "purchases/s, each strategy from its start"));
  st.strategies.forEach((s, i) => {
    const col = rushColors[s.strategy] || "#666";
    if (s.series.length > 0) {
      const pts = [[0, 0], ...s.series.map((p) => [p.t_ms / 1000, p.purchases_per_s])];
      parts.push(svgEl("polyline", { points: pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        fill: "none", stroke: col, "stroke-width": 2, "data-strategy": s.strategy }));
    }
    parts.push(svgEl("rect", { x: W - R + 12, y: T + i * 18, width: 10, height: 10, fill: col }));
    parts.push(svgEl("text", { x: W - R + 27, y: T + i * 18 + 9, "font-size": 11, fill: "#1f2933" }, s.strategy));
  });
  svg.replaceChildren(...parts);
}

function niceCeil(v) {
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

function renderRushStatus(st) {
  for (const s of st.strategies) renderRushRow(s);
  drawRushChart(st);
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
      `round trip ${ms(st.measured_rtt_ms)} ms` + (st.rtt_ms > 0 ? ` with ${ms(st.rtt_ms)} ms added)` : ")");
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
