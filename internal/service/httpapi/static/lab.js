// The lab: run one scenario on the server (POST /api/lab/runs), then draw
// its timeline and its fix's, step by step, side by side.
"use strict";

const labStepDelay = 180; // ms between two steps drawn

// keyNodes returns text as nodes with every Redis key in a box of its
// own, so that a key ending in a colon (lock:market:) cannot be misread
// against the sentence's punctuation.
const keyPattern = /((?:lock|users|inventory|op|fence):[A-Za-z0-9_.:-]*[A-Za-z0-9_:-]|market:)/g;
function keyNodes(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(keyPattern)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(el("code", { class: "key", text: m[0] }));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// stepWords says a step in plain words where the recorder's text is terse;
// virtual is set for a run on the explorer's virtual clock.
function stepWords(s, virtual) {
  let t = s.text;
  if (s.kind === "lease_expired" && t.includes("made to")) {
    t = t.replace(/\s*\(made to, as if its TTL had passed\)/, "") +
      ": forced expiry (the lab deletes the lease rather than wait out its TTL; " +
      "Redis does the same by itself once the TTL has passed)";
  } else if (s.kind === "lease_expired") {
    t += virtual ? " on the virtual clock" : " on Redis's own clock";
  }
  return t;
}

// places turns a checker's "[inv:alice inv:bob]" into words.
function places(list) {
  const words = list.trim().split(/\s+/).filter(Boolean).map((p) =>
    p.startsWith("inv:") ? `${p.slice(4)}'s inventory` : p === "market" ? "the market" : p);
  if (words.length <= 1) return words.join("");
  return words.slice(0, -1).join(", ") + " and " + words[words.length - 1];
}

const evidence = (n) => (n === 1 ? "one piece of evidence" : `${n} pieces of evidence`);
const times = (n) => (Number(n) === 1 ? "once" : Number(n) === 2 ? "twice" : `${n} times`);

// findingWords translates one line of checker output into a sentence, and
// names the item it is about (or "" when it is about none).
function findingWords(raw) {
  let m = /^(history|audit): (.*)$/.exec(raw);
  const source = m && m[1] === "history" ? "the recorded history" : "the audit of the final state";
  const text = m ? m[2] : raw;
  if ((m = /^item (\S+): no linearization of (\[.*\]) ending in \[(.*)\]$/.exec(text))) {
    return { item: m[1], sold: 0, text: `No order of the operations on ${m[1]} explains where it ended, in ${places(m[3])}: ` +
      `the purchases overlapped as no lock should allow (${source}).`, detail: m[2] };
  }
  if ((m = /^item (\S+) bought (\d+) times, listed at most (\d+) times$/.exec(text))) {
    return { item: m[1], sold: +m[2], text: `Item ${m[1]} was bought ${times(m[2])} but listed only ${times(m[3])} (${source}).` };
  }
  if ((m = /^item (\S+) is in (\d+) places$/.exec(text))) {
    return { item: m[1], sold: 0, text: `Item ${m[1]} is in ${m[2]} places at once (${source}).` };
  }
  if ((m = /^item (\S+) sold (\d+) times but listed (\d+) \(acknowledged\)$/.exec(text))) {
    return { item: m[1], sold: +m[2], text: `${m[2]} buyers were told they bought ${m[1]}, listed ${times(m[3])} (${source}).` };
  }
  if ((m = /^item (\S+) sold (\d+) times but listed (\d+)$/.exec(text))) {
    return { item: m[1], sold: +m[2], text: `The receipts show ${m[1]} sold ${times(m[2])}, listed ${times(m[3])} (${source}).` };
  }
  if ((m = /^resource: the (\S+) was sold twice: ([^;]*)(?:; audit: (.*))?$/.exec(raw))) {
    return { item: m[1], sold: 2, text: `Item ${m[1]} was sold twice: ${m[2]}` +
      (m[3] ? ` (the audit of the final state: ${m[3]}).` : ".") };
  }
  if ((m = /^resource: (.*)$/.exec(raw))) {
    return { item: "", sold: 0, text: `The shared state at the end: ${m[1]}.` };
  }
  if (/^no violation/.test(text)) {
    return { item: "", sold: 0, text: "No violation: every item is in exactly one place and the money adds up." };
  }
  m = /\bitem (\S+?)[:, ]/.exec(text + " ");
  return { item: m ? m[1] : "", sold: 0, text: `${source[0].toUpperCase()}${source.slice(1)} found: ${text}.` };
}

// groupFindings turns the checkers' lines into findings: all lines about
// one item are one finding (a double sale), the lines its evidence.
function groupFindings(steps) {
  const groups = [];
  const byItem = new Map();
  for (const s of steps) {
    if (s.kind !== "finding") continue;
    const w = findingWords(s.text);
    w.raw = s.text;
    w.bad = Boolean(s.violation);
    let g = w.item && w.bad ? byItem.get(w.item) : undefined;
    if (!g) {
      g = { item: w.item, bad: w.bad, sold: 0, evidence: [] };
      groups.push(g);
      if (w.item && w.bad) byItem.set(w.item, g);
    }
    g.sold = Math.max(g.sold, w.sold);
    g.evidence.push(w);
  }
  for (const g of groups) {
    if (!g.bad) g.title = g.evidence[0].text;
    else if (g.item && g.sold >= 2) {
      g.short = `item ${g.item} sold ${times(g.sold)}`;
      g.title = `Item ${g.item} was sold ${times(g.sold)}: one finding, with ${evidence(g.evidence.length)}.`;
    } else if (g.item) {
      g.short = `item ${g.item} in an impossible state`;
      g.title = `Item ${g.item} ended in an impossible state: one finding, with ${evidence(g.evidence.length)}.`;
    }
    else g.title = g.evidence[0].text;
  }
  return groups;
}

function findingNode(g) {
  if (!g.bad) return el("li", { class: "finding" }, ...keyNodes(g.title));
  return el("li", { class: "bad finding", "data-item": g.item },
    el("strong", {}, ...keyNodes(g.title)),
    el("ul", { class: "evidence" }, ...g.evidence.map((w) => el("li", {}, ...keyNodes(w.text),
      w.detail ? el("details", {}, el("summary", { text: "the operations" }), el("code", { text: w.detail })) : null))),
    el("details", {}, el("summary", { text: "the checkers' own words" }),
      el("ul", {}, ...g.evidence.map((w) => el("li", {}, el("code", { text: w.raw }))))));
}

// verdictWords restates a verdict counting findings, not checker lines.
function verdictWords(v, groups) {
  const bad = groups.filter((g) => g.bad);
  if (bad.length === 0) return v.verdict;
  const shorts = bad.map((g) => g.short).filter(Boolean);
  const n = (bad.length === 1 ? "one finding" : `${bad.length} findings`) + (shorts.length ? ": " + shorts.join(", ") : "");
  return v.verdict.replace(/the checkers found \d+ violations?\.?/, `the checkers made ${n}.`)
    .replace(/\(\d+ violations?\)/, `(${n}, evidence above)`);
}

async function loadLabScenarios() {
  const sel = $("#lab-scenario");
  try {
    const sc = await labScenarios();
    const recipes = el("optgroup", { label: "Lock recipes (gallery)" },
      ...sc.recipes.map((r) => el("option", { value: "recipe:" + r.recipe, text: `${r.recipe}. ${r.name}` })));
    const groups = [recipes];
    for (const f of sc.faults) {
      groups.push(el("optgroup", { label: `Fault: ${f.fault}` + (f.available ? "" : " (needs redis-server)") },
        ...f.strategies.map((s) => el("option", {
          value: `fault:${f.fault}:${s}`, text: `${f.fault} under ${s}`, disabled: !f.available,
        }))));
    }
    sel.replaceChildren(...groups);
    sel.value = "recipe:6";
    sel.dataset.ready = "true";
  } catch (e) {
    showError("loading the lab", e);
  }
}

function labRequest(value) {
  const [kind, a, b] = value.split(":");
  return kind === "recipe" ? { recipe: a } : { fault: a, strategy: b };
}

async function runLab(ev) {
  ev.preventDefault();
  const button = $("#lab-run");
  const status = $("#lab-status");
  button.disabled = true;
  $("#lab-runs").replaceChildren();
  status.textContent = "running on the server…";
  status.dataset.state = "running";
  try {
    let run = await api("POST", "/api/lab/runs", labRequest($("#lab-scenario").value));
    $("#lab-description").textContent = (run.recipe ? `Recipe ${run.recipe}: ` : `Fault ${run.fault} under ${run.strategy}: `) + run.description;
    while (run.state === "running") {
      await new Promise((r) => setTimeout(r, 300));
      run = await api("GET", "/api/lab/runs/" + run.id);
    }
    if (run.state !== "done") throw new ApiError(0, "lab_failed", run.error || run.state);
    status.textContent = `ran in ${(run.elapsed_ms / 1000).toFixed(2)} s; drawing…`;
    const panes = run.runs.map(labPane);
    $("#lab-runs").replaceChildren(...panes.map((p) => p.root));
    if (run.runs.length === 1) {
      $("#lab-runs").append(el("p", { class: "muted lab-nofix", text: `${run.strategy} is already safe under this fault: there is no fix to show beside it.` }));
    }
    await Promise.all(panes.map((p) => p.play()));
    status.textContent = `done (${(run.elapsed_ms / 1000).toFixed(2)} s on the server)`;
    status.dataset.state = "done";
  } catch (e) {
    status.textContent = "failed";
    status.dataset.state = "failed";
    showError("lab run", e);
  }
  button.disabled = false;
}

// labPane builds one run's timeline: a grid with a column per client, the
// steps appearing one by one, then the findings and the verdict.
function labPane(v) {
  const clients = (v.timeline && v.timeline.clients) || [];
  const root = el("div", { class: "lab-run", "data-name": v.name });
  const groups = groupFindings(v.steps || []);
  const bad = groups.filter((g) => g.bad).length || v.violations;
  root.append(el("h3", {}, el("span", { text: v.name }),
    el("span", { class: bad > 0 ? "pill bad" : "pill ok", "data-findings": String(bad),
      text: bad === 0 ? "no violation" : bad === 1 ? "1 finding" : `${bad} findings` })));
  if (v.virtual_clock) {
    root.append(el("p", { class: "muted lab-clock", text: "A schedule on the explorer's virtual clock: " +
      "the times are virtual, and every run of this scenario shows the same steps at the same times." }));
  }
  const grid = el("div", { class: "lab-grid" });
  grid.style.gridTemplateColumns = `56px repeat(${clients.length}, minmax(0, 1fr))`;
  grid.append(el("div", { class: "lab-head muted", text: "ms" }), ...clients.map((c) => el("div", { class: "lab-head", text: c })));
  const findings = el("ul", { class: "lab-findings" });
  const verdict = el("p", { class: "verdict", hidden: true });
  root.append(grid, findings, verdict);
  const steps = v.steps || [];
  const play = async () => {
    for (const s of steps) {
      if (s.kind === "finding") continue;
      const col = clients.indexOf(s.client);
      if (col < 0) continue;
      let cls = "lab-step kind-" + s.kind;
      if (s.violation) cls += " marked";
      else if (s.kind === "commit_refused") cls += " refused";
      const text = stepWords(s, v.virtual_clock) + (s.times > 1 ? ` (×${s.times})` : "");
      const row = [el("div", { class: "lab-time muted", text: s.at_ms.toFixed(1) })];
      for (let i = 0; i < clients.length; i++) {
        row.push(i === col
          ? el("div", { class: cls, "data-kind": s.kind }, el("span", {}, ...keyNodes(text)),
            s.violation ? el("span", { class: "why" }, ...keyNodes("!! " + s.violation)) : null)
          : el("div", { class: "lab-idle" }));
      }
      grid.append(...row);
      await new Promise((r) => setTimeout(r, labStepDelay));
    }
    findings.replaceChildren(...groups.map(findingNode));
    verdict.replaceChildren(...keyNodes(verdictWords(v, groups)));
    verdict.hidden = false;
    verdict.className = "verdict " + (v.violations > 0 ? "bad" : "ok");
  };
  return { root, play };
}

$("#lab-form").addEventListener("submit", runLab);
loadLabScenarios();
