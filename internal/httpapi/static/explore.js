// The explorer in the lab: a session on the server (POST
// /api/explore/sessions) holds one schedule of the real lock code; each
// button sends one of the state's enabled actions back as it came, and the
// swimlanes are drawn from the state the server answers.
"use strict";

// stepMS is the pause between the steps of a counterexample played back,
// time for the eye to follow it.
const explore = { id: "", state: null, view: -1, playing: false, stepMS: 350 };

const exploreProperties = {
  mutual_exclusion: "mutual exclusion broke: two clients hold an unexpired lease at once",
  resource: "the protected resource broke although the lock did not: a write from a client whose lease had run out",
  liveness: "liveness broke: a lock that no live client holds blocks everyone",
};

// actionLabel says what pressing an action's button does.
function actionLabel(a) {
  switch (a.kind) {
    case "run": return a.command;
    case "tick": return `let time pass to ${fmtClock(a.at_ms)}`;
    case "pause": return { short: "pause (half a lease)", long: "pause past its lease", forever: "pause for good" }[a.length] || `pause (${a.length})`;
    case "crash": return "crash";
    case "start": return "start: take the lock";
  }
  return a.kind;
}

function fmtClock(msv) {
  return Number(msv).toLocaleString("en-US") + " ms";
}

// The virtual clock's ticks are named by what they end.
function tickLabel(a, st) {
  const lease = (st.holders || []).find((h) => h.until_ms >= 0 && h.until_ms <= a.at_ms);
  return `let time pass to ${fmtClock(a.at_ms)}` + (lease ? ` (${lease.client}'s lease runs out)` : "");
}

async function loadExploreTargets() {
  const sel = $("#explore-target");
  try {
    const sc = await api("GET", "/api/lab/scenarios");
    sel.replaceChildren(...sc.recipes.map((r) => el("option", { value: "recipe:" + r.recipe, text: `${r.recipe}. ${r.name}` })));
    sel.value = "recipe:1";
    sel.dataset.ready = "true";
  } catch (e) {
    showError("loading the explorer", e);
  }
}

function exploreRequest() {
  const [, name] = $("#explore-target").value.split(":");
  return { recipe: name, fixed: $("#explore-fixed").checked };
}

async function startExplore(ev) {
  ev.preventDefault();
  const status = $("#explore-status");
  $("#explore-start").disabled = true;
  try {
    const r = await api("POST", "/api/explore/sessions", exploreRequest());
    explore.id = r.id;
    explore.view = -1;
    $("#explore-verdict").dataset.found = "";
    $("#explore-session").hidden = false;
    status.textContent = `${r.state.target}: ${r.state.about}`;
    renderExplore(r.state);
  } catch (e) {
    showError("starting a session", e);
  }
  $("#explore-start").disabled = false;
}

// act sends one action; the server answers the new state.
async function act(action) {
  if (!explore.playing) $("#explore-verdict").dataset.found = "";
  try {
    renderExplore(await api("POST", `/api/explore/sessions/${explore.id}/steps`, action));
  } catch (e) {
    showError(`step ${actionLabel(action)}`, e);
    throw e;
  }
}

async function undo() {
  $("#explore-verdict").dataset.found = "";
  try {
    renderExplore(await api("POST", `/api/explore/sessions/${explore.id}/undo`, {}));
  } catch (e) {
    showError("undo", e);
  }
}

// findBug asks the explorer for a continuation that breaks a property and
// plays it step by step.
async function findBug() {
  const verdict = $("#explore-verdict");
  setPlaying(true);
  verdict.className = "verdict";
  verdict.dataset.found = "";
  verdict.textContent = "searching every continuation from here…";
  try {
    const r = await api("POST", `/api/explore/sessions/${explore.id}/find`, {});
    if (!r.found) {
      verdict.className = "verdict ok";
      verdict.dataset.found = "none";
      verdict.textContent = r.note ? `No bug found: ${r.note}.` :
        `No bug from here: ${fmt(r.schedules)} schedules explored in ${dec1(r.elapsed_ms / 1000)} s` +
        (r.exhaustive ? ", every one within the bounds" : "") + `, and no property broke (bounds: ${r.model}).`;
      setPlaying(false);
      return;
    }
    verdict.textContent = `Found one after ${fmt(r.schedules)} schedules: ${exploreProperties[r.property] || r.property}. ` +
      `Playing it (${r.actions.length} steps)…`;
    for (const a of r.actions) {
      await act(a);
      await new Promise((res) => setTimeout(res, explore.stepMS));
    }
    verdict.dataset.found = r.property;
  } catch (e) {
    showError("find a bug", e);
  }
  setPlaying(false);
}

function setPlaying(on) {
  explore.playing = on;
  for (const b of document.querySelectorAll("#explore-session button")) b.disabled = on;
  if (!on && explore.state) renderExplore(explore.state);
}

// renderExplore draws a state: the next steps as buttons, the clock, the
// lease holders, the resource, and the swimlanes up to the slider.
function renderExplore(st) {
  explore.state = st;
  const n = st.steps.length;
  const slider = $("#explore-slider");
  slider.max = String(n);
  explore.view = n;
  slider.value = String(explore.view);
  $("#explore-clock").textContent = fmtClock(st.clock_ms);
  const holders = st.holders || [];
  $("#explore-holders").replaceChildren(holders.length === 0
    ? el("span", { class: "pill", text: "no valid lease" })
    : el("span", {}, ...holders.map((h) => el("span", { class: "pill holder", "data-client": h.client },
      `${h.client} holds `, el("code", { class: "key", text: h.key }),
      h.until_ms >= 0 ? ` until ${fmtClock(h.until_ms)}` : " (no expiry)"))));
  $("#explore-resource").textContent = st.resource ? "resource: " + st.resource : "";
  renderActions(st);
  renderLanes(st, explore.view);
  const verdict = $("#explore-verdict");
  const vs = st.violations || [];
  if (vs.length > 0) {
    verdict.className = "verdict bad";
    verdict.replaceChildren(...keyNodes(vs.map((v) => `Step ${v.step + 1}: ${exploreProperties[v.property] || v.property}. ${v.message}`).join(" ")));
  } else if (st.complete) {
    verdict.className = "verdict ok";
    verdict.textContent = "Every client is done; no property broke.";
  } else if (!explore.playing && !verdict.dataset.found) {
    verdict.className = "verdict";
    verdict.textContent = "";
  }
  $("#explore-undo").disabled = explore.playing || n === 0;
  $("#explore-find").disabled = explore.playing || st.enabled.length === 0;
  $("#explore-session").dataset.steps = String(n);
}

function renderActions(st) {
  const byClient = new Map();
  for (const c of st.clients) byClient.set(c, []);
  const shared = [];
  for (const a of st.enabled) {
    if (a.kind === "tick") shared.push(a);
    else {
      if (!byClient.has(a.client)) byClient.set(a.client, []);
      byClient.get(a.client).push(a);
    }
  }
  const behind = explore.view < st.steps.length;
  const button = (a) => el("button", {
    type: "button", class: a.kind === "run" || a.kind === "start" ? "run" : a.kind === "tick" ? "tick" : "fault",
    "data-kind": a.kind, "data-client": a.client || "", "data-command": a.command || "",
    disabled: explore.playing || behind, text: a.kind === "tick" ? tickLabel(a, st) : actionLabel(a),
    onclick: () => act(a).catch(() => {}),
  });
  const boxes = [...byClient].map(([c, acts]) => el("div", { class: "explore-client", "data-client": c },
    el("h4", { text: `client ${c}` }),
    acts.length === 0 ? el("span", { class: "gone", text: clientGone(st, c) })
      : el("div", { class: "buttons" }, ...acts.map(button))));
  if (shared.length > 0) {
    boxes.push(el("div", { class: "explore-client", "data-client": "" },
      el("h4", { text: "time (leases run out on this clock)" }), el("div", { class: "buttons" }, ...shared.map(button))));
  }
  $("#explore-actions").replaceChildren(...boxes);
}

function clientGone(st, c) {
  const last = [...st.steps].reverse().find((s) => s.action.client === c);
  if (last && last.action.kind === "crash") return "crashed";
  if (last && last.action.kind === "pause") return "paused";
  return "nothing to send now (done, or asleep until time passes)";
}

// renderLanes draws one row per step, in its client's lane; steps after
// the slider's position are faded; a step that broke a property is lit.
function renderLanes(st, upto) {
  const lanes = $("#explore-lanes");
  const clients = st.clients;
  lanes.style.gridTemplateColumns = `70px repeat(${clients.length}, minmax(0, 1fr))`;
  const broke = new Map();
  for (const v of st.violations || []) broke.set(v.step, v);
  const cells = [el("div", { class: "lab-head muted", text: "clock" }),
    ...clients.map((c) => el("div", { class: "lab-head", text: `client ${c}` }))];
  st.steps.forEach((s, i) => {
    const v = broke.get(i) || (s.violation ? { property: s.violation, message: "" } : null);
    const col = s.action.kind === "tick" ? -1 : clients.indexOf(s.action.client);
    let cls = "lab-step" + (s.action.kind === "tick" ? " tick" : s.action.kind === "run" || s.action.kind === "start" ? "" : " fault");
    if (v) cls += " marked";
    if (i >= upto) cls += " future";
    const body = el("div", { class: cls, "data-step": String(i), "data-kind": s.action.kind, "data-client": s.action.client || "",
      "data-property": v ? v.property : "" },
      el("span", {}, ...keyNodes(s.text)),
      v ? el("span", { class: "why" }, `!! ${v.property}` + (v.message ? `: ${v.message}` : "")) : null);
    cells.push(el("div", { class: "lab-time muted", text: fmtClock(s.clock_ms) }));
    if (col < 0) {
      body.style.gridColumn = `2 / span ${clients.length}`;
      cells.push(body);
    } else {
      for (let k = 0; k < clients.length; k++) cells.push(k === col ? body : el("div", { class: "lab-idle" }));
    }
  });
  lanes.replaceChildren(...cells);
  $("#explore-position").textContent = `${upto} of ${st.steps.length} steps`;
  $("#explore-resume").hidden = upto >= st.steps.length || explore.playing;
}

// scrub shows the history up to the slider; "Continue from here" undoes
// the steps after it, so the next action branches off there.
function scrub() {
  explore.view = Number($("#explore-slider").value);
  renderActions(explore.state);
  renderLanes(explore.state, explore.view);
}

async function resumeHere() {
  const target = explore.view;
  setPlaying(true);
  try {
    let st = explore.state;
    while (st.steps.length > target) {
      st = await api("POST", `/api/explore/sessions/${explore.id}/undo`, {});
      explore.state = st;
    }
  } catch (e) {
    showError("undo", e);
  }
  explore.view = -1;
  setPlaying(false);
}

$("#explore-form").addEventListener("submit", startExplore);
$("#explore-undo").addEventListener("click", undo);
$("#explore-find").addEventListener("click", findBug);
$("#explore-slider").addEventListener("input", scrub);
$("#explore-resume").addEventListener("click", resumeHere);
loadExploreTargets();
