// The rush: run by the service (POST /api/rush), followed here by polling
// GET /api/rush and drawn as a table and a small live chart.
"use strict";

// Each strategy's line has a colour, a dash pattern and a marker of its
// own, so that the lines stay apart in grayscale and on a washed-out
// projector; the colours differ in lightness too.
const rushStyles = {
  watch: { color: "#d97706", dash: "", marker: "triangle" },
  coarse: { color: "#7c3aed", dash: "2 11", marker: "square" },
  fine: { color: "#1d4ed8", dash: "20 10", marker: "circle" },
  lua: { color: "#14532d", dash: "22 7 3 7", marker: "diamond" },
};
const rushStyle = (s) => rushStyles[s] || { color: "#475569", dash: "", marker: "circle" };
const rushColors = Object.fromEntries(Object.entries(rushStyles).map(([k, v]) => [k, v.color]));
const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

// marker draws a strategy's marker, of radius r, centred on (cx, cy).
function marker(kind, cx, cy, r, color) {
  const pts = (list) => list.map(([dx, dy]) => `${(cx + dx * r).toFixed(1)},${(cy + dy * r).toFixed(1)}`).join(" ");
  const paint = { fill: color, stroke: "#fff", "stroke-width": 2 };
  switch (kind) {
    case "triangle": return svgEl("polygon", { points: pts([[0, -1.25], [1.15, 0.8], [-1.15, 0.8]]), ...paint });
    case "square": return svgEl("rect", { x: cx - r, y: cy - r, width: 2 * r, height: 2 * r, ...paint });
    case "diamond": return svgEl("polygon", { points: pts([[0, -1.35], [1.35, 0], [0, 1.35], [-1.35, 0]]), ...paint });
  }
  return svgEl("circle", { cx, cy, r: r * 1.1, ...paint });
}

// niceStep is a round step (1, 2 or 5 times a power of ten) that cuts
// 0..max into about n parts: 0, 50, 100, ... rather than 0, 63, 125.
function niceStep(max, n) {
  const raw = Math.max(max, 1e-9) / n;
  const p = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const m of [1, 2, 5]) if (raw <= m * p * 1.0001) return m * p;
  return 10 * p;
}

// ticks are the round values from 0 to max or just past it.
function ticks(max, n) {
  const step = niceStep(max, n);
  const out = [];
  for (let v = 0; v < max + step * 0.999; v += step) out.push(Math.round(v / step) * step);
  return out;
}

// tickText writes a tick without the float noise of its sum.
const tickText = (v, step) => (step >= 1 ? fmt(Math.round(v)) : String(Number(v.toFixed(Math.max(0, -Math.floor(Math.log10(step)))))));

// rushYMax is the largest purchases per second of the rushes' series.
function rushYMax(rushes) {
  let y = 1;
  for (const st of rushes) for (const s of st.strategies) for (const p of s.series || []) y = Math.max(y, p.purchases_per_s);
  return y;
}

// drawRushChart draws purchases per second over each strategy's own run
// into svg: round ticks, each line dashed and marked in its own way, and
// labelled where it ends rather than in a legend. opts: W and H (the
// viewBox), FS (the labels' size in its units, chosen for the size the
// chart is shown at), yMax (to share a scale between charts) and title.
function drawRushChart(svg, st, opts) {
  const o = { W: 1200, H: 420, FS: 24, title: "purchases per second, each strategy from its own start", ...opts };
  const { W, H, FS } = o;
  const L = FS * 3.6, R = FS * (o.title ? 6.5 : 6.2), T = o.title ? FS * 2.3 : FS, B = FS * 2.4;
  const xMax = Math.max(st.strategy_duration_ms || 1000, 1) / 1000;
  const yTicks = ticks(o.yMax || rushYMax([st]), 4);
  const xTicks = ticks(xMax, W > 900 ? 5 : 4).filter((t) => t <= xMax * 1.0001);
  const yTop = yTicks[yTicks.length - 1];
  const x = (t) => L + (t / xMax) * (W - L - R);
  const y = (v) => T + (1 - v / yTop) * (H - T - B);
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const parts = [svgEl("rect", { x: 0, y: 0, width: W, height: H, fill: "#fff" })];
  const ystep = yTicks.length > 1 ? yTicks[1] : 1;
  for (const v of yTicks) {
    parts.push(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), stroke: v === 0 ? "#64748b" : "#d5dbe1", "stroke-width": v === 0 ? 2 : 1.5 }));
    parts.push(svgEl("text", { x: L - 10, y: y(v) + FS / 3, "text-anchor": "end", "font-size": FS, fill: "#334155" }, tickText(v, ystep)));
  }
  const xstep = xTicks.length > 1 ? xTicks[1] : 1;
  for (const t of xTicks) {
    parts.push(svgEl("line", { x1: x(t), x2: x(t), y1: H - B, y2: H - B + 8, stroke: "#64748b", "stroke-width": 2 }));
    parts.push(svgEl("text", { x: x(t), y: H - B + FS * 1.25, "text-anchor": "middle", "font-size": FS, fill: "#334155" },
      tickText(t, xstep) + (t === xTicks[xTicks.length - 1] ? " s" : "")));
  }
  if (o.title) {
    parts.push(svgEl("text", { x: 8, y: FS * 1.3, "font-size": FS, "font-weight": 600, fill: "#1f2933" }, o.title));
  }
  // The lines, then their labels where they end, moved apart so that
  // none overlaps another.
  const labels = [];
  for (const s of st.strategies) {
    const sty = rushStyle(s.strategy);
    const series = s.series || [];
    if (series.length === 0) continue;
    const pts = [[0, 0], ...series.map((p) => [p.t_ms / 1000, p.purchases_per_s])].map(([t, v]) => [x(Math.min(t, xMax)), y(v)]);
    parts.push(svgEl("polyline", { points: pts.map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(" "),
      fill: "none", stroke: sty.color, "stroke-width": FS / 5, "stroke-linejoin": "round", "stroke-linecap": "round",
      "stroke-dasharray": sty.dash, "data-strategy": s.strategy }));
    const every = Math.max(1, Math.ceil(pts.length / 8));
    pts.forEach(([a, b], i) => {
      if (i > 0 && (i % every === 0 || i === pts.length - 1)) parts.push(marker(sty.marker, a, b, FS / 4, sty.color));
    });
    const [ex, ey] = pts[pts.length - 1];
    labels.push({ s, ex, ey, y: ey });
  }
  labels.sort((a, b) => a.ey - b.ey);
  const gap = FS * 1.45;
  for (let i = 1; i < labels.length; i++) labels[i].y = Math.max(labels[i].y, labels[i - 1].y + gap);
  const bottom = H - B;
  for (let i = labels.length - 1; i >= 0; i--) {
    const limit = i === labels.length - 1 ? bottom : labels[i + 1].y - gap;
    labels[i].y = Math.max(T, Math.min(labels[i].y, limit));
  }
  for (const l of labels) {
    const sty = rushStyle(l.s.strategy);
    const lx = W - R + FS * 0.9;
    parts.push(svgEl("line", { x1: l.ex + 4, y1: l.ey, x2: lx - FS * 0.5, y2: l.y, stroke: "#94a3b8", "stroke-width": 1.5 }));
    parts.push(marker(sty.marker, lx, l.y, FS / 4, sty.color));
    parts.push(svgEl("text", { x: lx + FS * 0.6, y: l.y + FS / 3, "font-size": FS * 1.1, "font-weight": 700, fill: "#1f2933",
      class: "line-label", "data-strategy": l.s.strategy }, l.s.strategy));
  }
  svg.replaceChildren(...parts);
}

// One number format per column: whole counts, rates and per-purchase
// figures with one decimal, waits with two; thousands separated.
const fixed = (d) => (x) => Number(x).toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
const dec1 = fixed(1);
const dec2 = fixed(2);

// lostOf is how many purchases found their listing already bought (or
// repriced) by another buyer; the rest of the failures are counted apart.
const lostOf = (s) => s.lost_to_another_buyer;

// swatch is a strategy's marker and a stretch of its line, as the chart
// draws them, to key the table's rows to the chart.
function swatch(strategy) {
  const sty = rushStyle(strategy);
  const svg = svgEl("svg", { class: "swatch", viewBox: "0 0 40 20", "aria-hidden": "true" });
  svg.append(svgEl("line", { x1: 2, y1: 10, x2: 38, y2: 10, stroke: sty.color, "stroke-width": 4, "stroke-dasharray": sty.dash.split(" ").map((v) => v / 2).join(" ") }),
    marker(sty.marker, 20, 10, 5, sty.color));
  return svg;
}

function rushRowOf(s) {
  let row = document.getElementById("rush-" + s.strategy);
  if (!row) {
    const td = (cls) => el("td", { class: cls });
    row = el("tr", { id: "rush-" + s.strategy },
      el("td", { class: "strat" }, swatch(s.strategy), el("span", { class: "name", text: s.strategy })),
      td("num bought"), td("num rate"), td("num retries"), td("num lockwaits"), td("num waits"),
      td("num samples"), td("num lost"), td("num audit"));
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

// rushReading sums a finished (or cancelled) rush up in sentences that
// state only what it measured. A strategy is named the one that bought
// the most only when its slowest fifth beat every other strategy's
// fastest: a difference within that spread is noise the reading cannot
// tell from a real one, and it says so. On miniredis, which serves one
// command at a time inside the service, it draws no verdict at all.
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
        ": the difference lies within their spread.");
    }
  }
  const rtt = st.rtt_ms > 0 ? `a round trip of ${dec2(st.measured_rtt_ms)} ms (${dec2(st.rtt_ms)} ms added)` : `a round trip of ${dec2(st.measured_rtt_ms)} ms`;
  const w = by.watch;
  if (w && w.bought === 0) {
    out.push(`WATCH bought nothing, with ${rtt}: all ${fmt(w.retries)} of its EXECs were aborted, each because a key it watched changed between its reads and its EXEC.`);
  } else if (w) {
    out.push(`WATCH retried ${dec1(w.retries_per_purchase)} times per purchase, with ${rtt}: each retry is an EXEC aborted because a key it watched changed between its reads and its EXEC.`);
  }
  const c = by.coarse;
  if (c && c.bought > 0 && c.lock_waits_per_purchase >= 1) {
    out.push(`Each of the coarse lock's purchases found the one market-wide lock taken ${dec1(c.lock_waits_per_purchase)} times before it held it.`);
  }
  const lost = lostOf(best);
  if (lost > 0) {
    out.push(`${fmt(lost)} of ${best.strategy}'s attempts found their listing already sold to another buyer: buyers competing, not errors.`);
  }
  return out.join(" ");
}

// rushShortMS is a strategy's run below which one rush's figures are
// noisy whatever the machine: a few seconds hold a few dozen of the
// chart's points.
const rushShortMS = 5000;

// rushNoise is the note that goes with a rush's figures where they are
// noisy: the strategies ran one after the other, for a short time, or on
// a busy machine (a load average above its CPUs at the start or the
// end). "" when none of that holds; short, only the reasons.
function rushNoise(st, short) {
  if (st.state === "running" || st.state === "idle" || st.redis === "miniredis") return "";
  const why = [];
  if (st.strategy_duration_ms < rushShortMS) {
    why.push(`each strategy ran only ${(st.strategy_duration_ms / 1000).toFixed(1)} s`);
  }
  const a = st.load_start, b = st.load_end;
  if (a && b && Math.max(a.load_avg_1m, b.load_avg_1m) > a.cpus) {
    why.push(`the machine was busy (load average ${dec1(a.load_avg_1m)} at the start, ${dec1(b.load_avg_1m)} at the end, on ${a.cpus} CPUs)`);
  }
  if (why.length === 0) return "";
  if (short) return `Noisy: ${why.join(", and ")}.`;
  return `Noisy: ${why.join(", and ")}. The strategies ran one after the other, so a change in the machine's load ` +
    "hits one and not another: run it again, for longer, before trusting a difference " +
    "(simulate run -rounds measures them in turns).";
}

// ---- the comparison: finished rushes kept side by side ----

// rushKeptKey names the kept rushes in this browser's storage; at most
// rushKeepMax are kept, the oldest dropped first.
const rushKeptKey = "lockmarket.rush_comparison";
const rushKeepMax = 3;
const rushLetters = "ABC";

function keptRushes() {
  try {
    const v = JSON.parse(localStorage.getItem(rushKeptKey) || "[]");
    return Array.isArray(v) ? v : [];
  } catch (e) {
    return [];
  }
}

function saveKept(list) {
  try {
    localStorage.setItem(rushKeptKey, JSON.stringify(list));
  } catch (e) { /* storage full or refused: the comparison lives for this page only */ }
}

// keepRush adds a finished rush to the comparison, once.
function keepRush(st) {
  if (!st.id || st.state !== "done") return;
  const list = keptRushes();
  if (list.some((r) => r.id === st.id)) return;
  const slim = { ...st, strategies: st.strategies.map((s) => ({ ...s, failures: undefined })) };
  list.push(slim);
  saveKept(list.slice(-rushKeepMax));
  renderComparison();
}

// rushTitle says what a kept rush ran: "A: 2 ms added, 50 buyers, 10 s".
function rushTitle(st, i) {
  return `${rushLetters[i]}: ${dec2(st.rtt_ms).replace(/\.00$/, "")} ms added, ${st.buyers} buyers, ${fmt(st.duration_ms / 1000)} s`;
}

// renderComparison draws the kept rushes side by side on one scale, each
// with its figures, then a bar per strategy and rush of what each bought.
function renderComparison() {
  const list = keptRushes();
  const box = $("#rush-compare");
  box.hidden = list.length === 0;
  $("#rush-compare-hint").textContent = list.length === 1
    ? "One rush kept. Run another (say with a round trip of 2 ms) to see the two side by side." : "";
  const yMax = rushYMax(list);
  $("#rush-compare-runs").replaceChildren(...list.map((st, i) => {
    const svg = svgEl("svg", { class: "compare-chart", role: "img",
      "aria-label": `${rushTitle(st, i)}: purchases per second of each strategy over its run` });
    drawRushChart(svg, st, { W: 800, H: 460, FS: 34, yMax, title: "" });
    return el("figure", { class: "compare-run", "data-rush": st.id },
      el("figcaption", {},
        el("b", { text: rushTitle(st, i) }),
        el("span", { class: "muted", text: ` (round trip ${dec2(st.measured_rtt_ms)} ms)` }),
        el("button", { type: "button", class: "link", text: "×", title: "remove from the comparison",
          "aria-label": `remove rush ${rushLetters[i]} from the comparison`, onclick: () => {
            saveKept(keptRushes().filter((r) => r.id !== st.id));
            renderComparison();
          } })),
      svg,
      el("p", { class: "compare-note", text: rushNoise(st, true) }));
  }));
  drawTotals($("#rush-totals"), list);
}

// drawTotals draws what each strategy bought in each kept rush: a bar per
// strategy and rush, each labelled with its rush and its figure, so that
// no legend is needed and grayscale loses nothing.
function drawTotals(svg, list) {
  const strategies = [];
  for (const st of list) for (const s of st.strategies) if (!strategies.includes(s.strategy)) strategies.push(s.strategy);
  const FS = 26, bar = 34, gapIn = 8, gapOut = 26, L = 150, R = 170, W = 1200, T = FS * 2;
  const rows = strategies.length * list.length;
  const H = T + rows * (bar + gapIn) + strategies.length * gapOut;
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  let max = 1;
  for (const st of list) for (const s of st.strategies) max = Math.max(max, s.bought);
  const xTicks = ticks(max, 4);
  const top = xTicks[xTicks.length - 1];
  const x = (v) => L + FS * 2.5 + (v / top) * (W - L - FS * 2.5 - R);
  const parts = [svgEl("rect", { x: 0, y: 0, width: W, height: H, fill: "#fff" }),
    svgEl("text", { x: 8, y: FS * 1.2, "font-size": FS, "font-weight": 600, fill: "#1f2933" }, "bought in all, by strategy and rush")];
  let yy = T;
  for (const name of strategies) {
    const sty = rushStyle(name);
    const y0 = yy;
    list.forEach((st, i) => {
      const s = st.strategies.find((v) => v.strategy === name);
      const v = s ? s.bought : 0;
      parts.push(svgEl("text", { x: L + FS * 2.2, y: yy + bar / 2 + FS / 3, "text-anchor": "end", "font-size": FS, fill: "#334155" }, rushLetters[i]));
      parts.push(svgEl("rect", { x: x(0), y: yy, width: Math.max(2, x(v) - x(0)), height: bar, fill: sty.color,
        "fill-opacity": i === 0 ? 1 : 0.55, stroke: sty.color, "stroke-width": 2, "data-strategy": name, "data-rush": rushLetters[i] }));
      parts.push(svgEl("text", { x: x(v) + 10, y: yy + bar / 2 + FS / 3, "font-size": FS, fill: "#1f2933", class: "bar-value" },
        s ? fmt(v) : "not run"));
      yy += bar + gapIn;
    });
    parts.push(marker(sty.marker, 20, (y0 + yy - gapIn) / 2, FS / 2.6, sty.color));
    parts.push(svgEl("text", { x: 42, y: (y0 + yy - gapIn) / 2 + FS / 3, "font-size": FS * 1.05, "font-weight": 700, fill: "#1f2933" }, name));
    yy += gapOut;
  }
  svg.replaceChildren(...parts);
}

function renderRushStatus(st) {
  for (const s of st.strategies) renderRushRow(s);
  drawRushChart($("#rush-chart"), st);
  $("#rush-reading").textContent = st.state === "running" ? "" : rushReading(st);
  const noise = rushNoise(st);
  $("#rush-noise").textContent = noise;
  $("#rush-noise").hidden = noise === "";
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
  keepRush(st);
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

for (const e of document.querySelectorAll("#rush-form input")) keepTyped(e);
$("#rush-form").addEventListener("submit", startRush);
$("#rush-cancel").addEventListener("click", cancelRush);
$("#rush-compare-clear").addEventListener("click", () => { saveKept([]); renderComparison(); });
renderComparison();
pollRush();
