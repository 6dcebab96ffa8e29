// The lab: run one scenario on the server (POST /api/lab/runs), then draw
// its timeline and its fix's, step by step, side by side.
"use strict";

const labStepDelay = 180; // ms between two steps drawn

async function loadLabScenarios() {
  const sel = $("#lab-scenario");
  try {
    const sc = await api("GET", "/api/lab/scenarios");
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
  root.append(el("h3", {}, el("span", { text: v.name }),
    el("span", { class: v.violations > 0 ? "pill bad" : "pill ok", text: v.violations > 0 ? `${v.violations} violations` : "no violation" })));
  const grid = el("div", { class: "lab-grid" });
  grid.style.gridTemplateColumns = `56px repeat(${clients.length}, minmax(0, 1fr))`;
  grid.append(el("div", { class: "lab-head muted", text: "ms" }), ...clients.map((c) => el("div", { class: "lab-head", text: c })));
  const findings = el("ul", { class: "lab-findings" });
  const verdict = el("p", { class: "verdict", hidden: true });
  root.append(grid, findings, verdict);
  const steps = v.steps || [];
  const play = async () => {
    for (const s of steps) {
      if (s.kind === "finding") {
        findings.append(el("li", { class: s.violation ? "bad" : "", text: "checker: " + s.text }));
        continue;
      }
      const col = clients.indexOf(s.client);
      if (col < 0) continue;
      let cls = "lab-step kind-" + s.kind;
      if (s.violation) cls += " marked";
      else if (s.kind === "commit_refused") cls += " refused";
      const text = s.text + (s.times > 1 ? ` (×${s.times})` : "");
      const row = [el("div", { class: "lab-time muted", text: s.at_ms.toFixed(1) })];
      for (let i = 0; i < clients.length; i++) {
        row.push(i === col
          ? el("div", { class: cls, "data-kind": s.kind }, el("span", { text }),
            s.violation ? el("span", { class: "why", text: "!! " + s.violation }) : null)
          : el("div", { class: "lab-idle" }));
      }
      grid.append(...row);
      await new Promise((r) => setTimeout(r, labStepDelay));
    }
    verdict.textContent = v.verdict;
    verdict.hidden = false;
    verdict.className = "verdict " + (v.violations > 0 ? "bad" : "ok");
  };
  return { root, play };
}

$("#lab-form").addEventListener("submit", runLab);
loadLabScenarios();
