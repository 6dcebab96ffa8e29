// The explorer in the lab: a session on the server (POST
// /api/explore/sessions) holds one schedule of the real lock code and the
// state after each of its steps (frames). The slider picks a frame and the
// whole view follows it: clock, holders, each client's column, the verdict;
// the next steps and "find a bug" act from that frame, and a step taken
// there discards the steps after it. A search runs on the server as the
// session's find, which the page polls: progress, cancel, never a request
// that waits for the search. A reload of the tab reattaches to its
// session, and what was typed (the target, pasted Lua) is restored.
"use strict";

// stepMS is the pause between the steps of a counterexample played back,
// time for the eye to follow it; pollMS the pause between two readings of
// a running search; keepAliveMS how often an open page reads its session,
// so that the server's idle timer ends only those of closed tabs.
const explore = { id: "", state: null, view: 0, playing: false, finding: false, stepMS: 350, pollMS: 400,
  keepAliveMS: 15000, findTimer: null, found: "", findFocus: null };
const exploreSessionKey = "lockmarket.explore_session";

const exploreProperties = {
  mutual_exclusion: "mutual exclusion broke: two clients hold an unexpired lease at once",
  resource: "the protected resource broke although the lock did not: a write from a client whose lease had run out",
  liveness: "liveness broke: a lock that no live client holds blocks everyone",
  ownership: "ownership broke: a release or an extension answered success to a client whose hold had ended",
  lease: "the lease broke: the lock's key was left to live longer than its holder asked",
};

// propertyNames are the properties in words, for the verdict's list.
const propertyNames = { mutual_exclusion: "mutual exclusion", resource: "the resource (the counter)", liveness: "liveness",
  ownership: "ownership", lease: "its lease" };

// propertyVerdictWords says what each verdict of a property means.
const propertyVerdictWords = { holds: "holds", broken: "broken", open: "not settled", not_promised: "not promised, and shown broken",
  not_checked: "not checked" };

// actionLabel says what pressing an action's button does, naming its client.
function actionLabel(a) {
  const who = a.client ? a.client + ": " : "";
  switch (a.kind) {
    case "run": return who + a.command;
    case "tick": return `let time pass to ${fmtClock(a.at_ms)}`;
    case "pause": return who + ({ short: "pause (half a lease)", long: "pause past its lease", forever: "pause for good" }[a.length] || `pause (${a.length})`);
    case "crash": return who + "crash";
    case "start": return who + "start: take the lock";
  }
  return who + a.kind;
}

function fmtClock(msv) {
  return Number(msv).toLocaleString("en-US") + " ms";
}

// The virtual clock's ticks are named by what they end.
function tickLabel(a, fr) {
  const lease = (fr.holders || []).find((h) => h.until_ms >= 0 && h.until_ms <= a.at_ms);
  return `let time pass to ${fmtClock(a.at_ms)}` + (lease ? ` (${lease.client}'s lease runs out)` : "");
}

async function loadExploreTargets() {
  const sel = $("#explore-target");
  try {
    const sc = await labScenarios();
    const recipes = el("optgroup", { label: "lock recipes" },
      ...sc.recipes.map((r) => el("option", { value: "recipe:" + r.recipe, text: `${r.recipe}. ${r.name}` })));
    const strategies = el("optgroup", { label: "the market's strategies (buy one listing)" },
      ...["watch", "coarse", "fine", "lua"].map((s) => el("option", { value: "strategy:" + s, text: `strategy ${s}` })));
    const own = el("optgroup", { label: "your own lock" }, el("option", { value: "lua:", text: "your own lock, in Lua" }));
    sel.replaceChildren(recipes, strategies, own);
    sel.value = "recipe:1";
    keepTyped(sel);
    keepTyped($("#explore-fixed"));
    sel.dispatchEvent(new Event("change"));
    sel.dataset.ready = "true";
  } catch (e) {
    exploreError("loading the explorer", e);
  }
}

function exploreRequest() {
  const [kind, name] = $("#explore-target").value.split(":");
  const fix = $("#explore-fixed").checked;
  if (kind === "lua") {
    const lua = {};
    for (const op of luaOps) {
      const v = $(`#explore-lua-${op}`).value;
      if (v.trim() !== "") lua[op] = v;
    }
    const faults = luaFaults.filter((f) => $(`#explore-lua-fault-${f}`).checked);
    return { lua, clients: Number($("#explore-lua-clients").value), faults: faults.length > 0 ? faults : ["none"] };
  }
  return kind === "strategy" ? { strategy: name, fencing: fix } : { recipe: name, fixed: fix };
}

// Your own lock: Lua scripts in the explorer's convention, pasted or
// loaded from an example with one click. They run only on the session's
// own sandbox, a redis-server started for it, bounded (docs/lab.md).
const luaOps = ["acquire", "release", "extend"];
const luaFaults = ["pause-short", "pause-long", "pause-forever", "crash"];
const luaFaultWords = { "pause-short": "a pause shorter than the lease", "pause-long": "a pause past the lease",
  "pause-forever": "a pause for good", crash: "a crash" };
const luaExamples = {
  "release by a plain DEL": {
    acquire: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n  return 1\nend\nreturn 0",
    release: "-- BUG: deletes the lock whoever holds it now\nredis.call('DEL', KEYS[1])\nreturn 1",
    extend: "",
  },
  "extend renews anyone's lock": {
    acquire: "-- take the lock if it is free, with a lease\nif redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n  return 1\nend\nreturn 0",
    release: "-- delete the lock only if it still holds our token\nif redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0",
    extend: "-- BUG: renews the lease without asking whose lock it is\nreturn redis.call('PEXPIRE', KEYS[1], ARGV[2])",
  },
  "no lease: a crash blocks everyone": {
    acquire: "-- BUG: no expiry, so a holder that crashes keeps the lock for ever\nif redis.call('SET', KEYS[1], ARGV[1], 'NX') then\n  return 1\nend\nreturn 0",
    release: "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0",
    extend: "",
  },
  "correct": {
    acquire: "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\n  return 1\nend\nreturn 0",
    release: "if redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('DEL', KEYS[1])\nend\nreturn 0",
    extend: "-- renew only our own lease\nif redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\nend\nreturn 0",
  },
  "a loop that never ends": {
    acquire: "while true do end",
    release: "return 0",
    extend: "",
  },
};

// buildLuaPanel adds the panel where a lock's Lua is pasted, under the
// explorer's form; it shows while "your own lock" is chosen.
function buildLuaPanel() {
  const boxes = luaOps.map((op) => el("label", { class: "lua-script" },
    el("span", { text: op + (op === "extend" ? " (optional: called once inside the critical section)" : "") }),
    el("textarea", { id: `explore-lua-${op}`, rows: 5, spellcheck: false, "aria-label": `your lock's ${op} script (Lua)` })));
  const examples = Object.keys(luaExamples).map((name) => el("button", {
    type: "button", class: "lua-example", "data-example": name, text: name,
    onclick: () => {
      for (const op of luaOps) {
        $(`#explore-lua-${op}`).value = luaExamples[name][op];
        $(`#explore-lua-${op}`).dispatchEvent(new Event("input"));
      }
    },
  }));
  const bounds = el("fieldset", { class: "lua-bounds" },
    el("legend", { text: "searched with" }),
    el("label", {}, "clients ", el("select", { id: "explore-lua-clients" },
      el("option", { value: "3", text: "3 (a lock's classic bugs need a third)", selected: true }),
      el("option", { value: "2", text: "2 (quicker)" }))),
    ...luaFaults.map((f) => el("label", { class: "lua-fault" },
      el("input", { type: "checkbox", id: `explore-lua-fault-${f}`, checked: true }), " " + luaFaultWords[f])));
  const panel = el("div", { id: "explore-lua", class: "explore-lua", hidden: true },
    el("p", { class: "muted", text: "Your own lock, as Lua: KEYS[1] is the lock key, ARGV[1] the owner's token, ARGV[2] the " +
      "lease in ms; acquire and extend answer 1 (done) or 0, release 1 when it deleted the lock. It runs only on a " +
      "redis-server started for this session, never in the service; each script at most 4 KiB, each step 2 s. It is " +
      "judged as a recipe is: mutual exclusion, ownership, liveness and its lease; the counter its clients increment " +
      "is checked too, but a lease lock without fencing cannot promise it." }),
    el("div", { class: "buttons" }, el("span", { class: "muted", text: "load an example:" }), ...examples),
    bounds,
    el("div", { class: "lua-scripts" }, ...boxes));
  $("#explore-form").after(panel);
  for (const op of luaOps) keepTyped($(`#explore-lua-${op}`));
  $("#explore-target").addEventListener("change", () => {
    const lua = $("#explore-target").value.startsWith("lua:");
    panel.hidden = !lua;
    $("#explore-fixed").disabled = lua;
    if (lua) $("#explore-fixed").checked = false;
    $("#explore-fixed").dispatchEvent(new Event("input"));
  });
}

// exploreError shows an error in the explorer's panel, where the person
// looks, not at the top of the page, in words (errorText).
function exploreError(what, err) {
  const box = $("#explore-error");
  box.dataset.code = err instanceof ApiError ? err.code : "error";
  box.replaceChildren(el("span", { text: errorText(what, err) }),
    el("button", { type: "button", "aria-label": "dismiss the explorer's error", text: "×", onclick: () => { box.hidden = true; } }));
  box.hidden = false;
}

function clearExploreError() {
  $("#explore-error").hidden = true;
}

// endSession ends this tab's session on the server.
function endSession(id) {
  sessionStorage.removeItem(exploreSessionKey);
  return fetch(`/api/explore/sessions/${id}`, { method: "DELETE" }).catch(() => {});
}

// focusKey names the control that has the focus, so that restoreFocus
// finds it (or its like) after a step redraws the controls: by id, or an
// action's kind, client and length.
function focusKey(e) {
  if (!e || e === document.body || !e.closest("#explore-panel")) return null;
  if (e.id) return { id: e.id };
  return { kind: e.dataset.kind || "", client: e.dataset.client || "", length: e.dataset.length || "" };
}

// restoreFocus keeps the focus where the person was: on the control of
// key, or on the nearest that still stands (the same action of the same
// client, that client's next action, the first action), never back at the
// top of the page.
function restoreFocus(key) {
  if (!key) return;
  const usable = (e) => e && e.isConnected && !e.disabled && !e.closest("[hidden]");
  if (usable(document.activeElement) && document.activeElement !== document.body) return;
  const actions = [...document.querySelectorAll("#explore-actions button")].filter(usable);
  const same = (b) => b.dataset.kind === key.kind && b.dataset.client === key.client && b.dataset.length === key.length;
  const to = [key.id && document.getElementById(key.id), actions.find(same),
    actions.find((b) => b.dataset.client === key.client), actions[0], $("#explore-undo"), $("#explore-start")].find(usable);
  if (to) to.focus();
}

// showSession shows a session's state, started or reattached.
function showSession(st) {
  explore.found = "";
  explore.finding = false;
  $("#explore-verdict").dataset.found = "";
  showJudgement(null);
  $("#explore-session").hidden = false;
  $("#explore-status").textContent = `${st.target}: ${st.about}`;
  renderExplore(st);
}

async function startExplore(ev) {
  ev.preventDefault();
  const focus = focusKey(document.activeElement);
  clearExploreError();
  $("#explore-start").disabled = true;
  stopFindPolling();
  // One session per tab: a new one replaces the old.
  if (explore.id) {
    await endSession(explore.id);
    explore.id = "";
  }
  try {
    const r = await api("POST", "/api/explore/sessions", exploreRequest());
    explore.id = r.id;
    sessionStorage.setItem(exploreSessionKey, r.id);
    showSession(r.state);
  } catch (e) {
    exploreError("starting a session", e);
  }
  $("#explore-start").disabled = false;
  restoreFocus(focus);
}

// act sends one action from the slider's frame; a frame before the last
// branches there, discarding the steps after it.
async function act(action) {
  clearExploreError();
  if (!explore.playing) {
    $("#explore-verdict").dataset.found = "";
    explore.found = "";
    showJudgement(null);
  }
  const body = { ...action };
  if (explore.state && explore.view < explore.state.steps.length) body.from_step = explore.view;
  const focus = explore.playing ? null : focusKey(document.activeElement);
  try {
    renderExplore(await api("POST", `/api/explore/sessions/${explore.id}/steps`, body));
  } catch (e) {
    exploreError(`step ${actionLabel(action)}`, e);
    throw e;
  } finally {
    restoreFocus(focus);
  }
}

async function undo() {
  const focus = focusKey(document.activeElement);
  clearExploreError();
  explore.found = "";
  $("#explore-verdict").dataset.found = "";
  showJudgement(null);
  try {
    renderExplore(await api("POST", `/api/explore/sessions/${explore.id}/undo`, {}));
  } catch (e) {
    exploreError("undo", e);
  }
  restoreFocus(focus);
}

// findBug asks the server to search from the slider's frame; the page
// polls the session for the search's progress and result, and plays a
// counterexample step by step.
async function findBug() {
  clearExploreError();
  const verdict = $("#explore-verdict");
  verdict.className = "verdict";
  verdict.dataset.found = "";
  explore.findFocus = focusKey(document.activeElement);
  showJudgement(null);
  try {
    const st = await api("POST", `/api/explore/sessions/${explore.id}/find`, { from_step: explore.view });
    explore.finding = true;
    renderExplore(st, explore.view);
    showFind(st.find);
    // The find button is disabled while the search runs: the focus
    // goes to the button that cancels it, and comes back at the end.
    if (explore.findFocus) $("#explore-cancel").focus();
    explore.findTimer = setTimeout(pollFind, explore.pollMS);
  } catch (e) {
    exploreError("find a bug", e);
  }
}

function stopFindPolling() {
  if (explore.findTimer !== null) clearTimeout(explore.findTimer);
  explore.findTimer = null;
}

async function pollFind() {
  explore.findTimer = null;
  let st;
  try {
    st = await api("GET", `/api/explore/sessions/${explore.id}`);
  } catch (e) {
    explore.finding = false;
    exploreError("following the search", e);
    renderFindControls();
    findFocusBack();
    return;
  }
  const f = st.find;
  if (!f || f.state === "running") {
    explore.state = st;
    showFind(f);
    if (explore.finding) explore.findTimer = setTimeout(pollFind, explore.pollMS);
    return;
  }
  explore.finding = false;
  renderExplore(st, f.from_step);
  await findEnded(f);
  findFocusBack();
}

// showFind shows a running search's progress.
function showFind(f) {
  const p = $("#explore-progress");
  if (!f || f.state !== "running") { p.hidden = true; renderFindControls(); return; }
  p.hidden = false;
  const secs = (f.elapsed_ms / 1000).toFixed(1);
  // One search answers every session that asks for the same one.
  const others = f.following > 1 ? ` (one search for the ${f.following} sessions asking the same)` : "";
  p.textContent = f.waiting
    ? `Waiting for a free CPU: number ${f.queue_position} in the queue, ` +
      `about ${Math.max(1, Math.round(f.wait_estimate_ms / 1000))} s (from step ${f.from_step})${others}…`
    : `Searching every continuation from step ${f.from_step}: ${fmt(f.schedules)} schedules so far, ` +
      `${secs} s of at most ${(f.budget_ms / 1000).toFixed(0)} s${others}…`;
  p.dataset.schedules = String(f.schedules);
  p.dataset.queue = String(f.queue_position || 0);
  renderFindControls();
}

async function cancelFind() {
  $("#explore-cancel").disabled = true;
  stopFindPolling();
  try {
    const st = await api("DELETE", `/api/explore/sessions/${explore.id}/find`);
    explore.finding = false;
    renderExplore(st, st.find ? st.find.from_step : undefined);
    await findEnded(st.find || { state: "cancelled", elapsed_ms: 0, schedules: 0 });
    findFocusBack();
  } catch (e) {
    explore.finding = false;
    exploreError("cancelling the search", e);
    renderFindControls();
    findFocusBack();
  }
}

// findEnded says how a search ended and plays what it found.
async function findEnded(f) {
  const verdict = $("#explore-verdict");
  $("#explore-progress").hidden = true;
  const r = f.result;
  if (f.state === "cancelled") {
    verdict.className = "verdict";
    verdict.dataset.found = "cancelled";
    verdict.textContent = `Search cancelled after ${dec1(f.elapsed_ms / 1000)} s and ${fmt(f.schedules)} schedules: nothing found so far.`;
    renderFindControls();
    return;
  }
  if (f.state === "failed") {
    verdict.className = "verdict bad";
    verdict.dataset.found = "failed";
    verdict.textContent = `The search failed: ${f.error}`;
    renderFindControls();
    return;
  }
  const shown = f.unpromised && f.unpromised.counterexample;
  if (f.state === "none" && !shown) {
    verdict.className = "verdict ok";
    verdict.dataset.found = "none";
    verdict.textContent = f.note ? `No bug found: ${f.note}.` :
      `No bug from step ${f.from_step}: ${fmt(r.schedules)} schedules explored in ${dec1(f.elapsed_ms / 1000)} s` +
      (r.exhaustive ? ", every one within the bounds" : "") +
      `, and no property broke (bounds: ${explore.state ? explore.state.model : "the session's"}).` +
      (f.kept ? " This answer was kept from the same search asked for earlier." : "");
    showJudgement(f);
    renderFindControls();
    return;
  }
  // The counterexample starts with the steps searched from: the lock's
  // bug, or, when the lock kept all it promises, what it does not promise.
  const c = shown ? f.unpromised.counterexample : r.counterexample;
  const rest = c.actions.slice(f.from_step);
  setPlaying(true);
  verdict.className = "verdict";
  verdict.textContent = shown
    ? `The lock holds: nothing it promises broke in ${fmt(r.schedules)} schedules. What it does not promise, ` +
      `found after ${fmt(f.unpromised.schedules)} more: ${exploreProperties[c.property] || c.property}. ` +
      `Playing it from step ${f.from_step} (${rest.length} steps)…`
    : `Found one after ${fmt(r.schedules)} schedules: ${exploreProperties[c.property] || c.property}. ` +
      `Playing it from step ${f.from_step} (${rest.length} steps)…`;
  showJudgement(f);
  try {
    explore.view = f.from_step;
    for (const a of rest) {
      await act(a);
      await new Promise((res) => setTimeout(res, explore.stepMS));
    }
    verdict.dataset.found = shown ? "not_promised" : c.property;
    explore.found = shown
      ? `Shown by the search from step ${f.from_step}, once ${fmt(r.schedules)} schedules had found nothing the lock promises broken.`
      : `Found by the search from step ${f.from_step}, after ${fmt(r.schedules)} schedules.`;
  } catch (e) {
    // act showed it
  }
  setPlaying(false);
}

// showJudgement lists what a search checked, and what it did not: each
// property with its verdict and why; nothing when f is null.
function showJudgement(f) {
  let box = $("#explore-judgement");
  if (!box) {
    box = el("div", { id: "explore-judgement", class: "judgement" });
    $("#explore-verdict").after(box);
  }
  const props = (f && f.properties) || [];
  box.hidden = props.length === 0;
  if (props.length === 0) {
    box.replaceChildren();
    return;
  }
  const model = explore.state ? explore.state.model : "";
  box.replaceChildren(el("b", { text: `What was checked${model ? ` (${model})` : ""}:` }),
    el("ul", {}, ...props.map((p) => el("li", { "data-property": p.property, "data-verdict": p.verdict },
      el("b", { text: `${propertyNames[p.property] || p.property}: ${propertyVerdictWords[p.verdict] || p.verdict}` }),
      p.note ? ` — ${p.note}.` : ""))));
}

function setPlaying(on) {
  explore.playing = on;
  if (explore.state) renderExplore(explore.state, explore.view);
}

// findFocusBack puts the focus back on the find button (or the nearest
// control standing) once a search ends, if it was there when it began.
function findFocusBack() {
  const key = explore.findFocus;
  explore.findFocus = null;
  if (key && document.activeElement === $("#explore-cancel")) $("#explore-cancel").blur();
  restoreFocus(key && key.id === "explore-cancel" ? { id: "explore-find" } : key);
}

function renderFindControls() {
  const busy = explore.playing || explore.finding;
  const st = explore.state;
  const fr = st ? st.frames[explore.view] : null;
  $("#explore-find").disabled = busy || !fr || fr.enabled.length === 0;
  $("#explore-find").textContent = st && explore.view < st.steps.length ? `Find a bug from step ${explore.view}` : "Find a bug from here";
  $("#explore-cancel").hidden = !explore.finding;
  $("#explore-cancel").disabled = !explore.finding;
  $("#explore-undo").disabled = busy || !st || st.steps.length === 0;
  $("#explore-slider").disabled = busy;
  $("#explore-start").disabled = false;
}

// renderExplore draws a state at frame view (default: the last).
function renderExplore(st, view) {
  explore.state = st;
  const n = st.steps.length;
  explore.view = view === undefined || view > n ? n : view;
  const slider = $("#explore-slider");
  slider.max = String(n);
  slider.value = String(explore.view);
  renderFrame();
  $("#explore-session").dataset.steps = String(n);
}

// renderFrame draws the slider's frame: the whole view follows it.
function renderFrame() {
  const st = explore.state;
  const k = explore.view;
  const fr = st.frames[k];
  const n = st.steps.length;
  const pos = `${k} of ${n} steps`;
  $("#explore-slider").setAttribute("aria-valuetext", pos);
  $("#explore-position").textContent = pos;
  $("#explore-session").dataset.view = String(k);
  $("#explore-clock").textContent = fmtClock(fr.clock_ms);
  const holders = fr.holders || [];
  $("#explore-holders").replaceChildren(holders.length === 0
    ? el("span", { class: "pill", text: "no valid lease" })
    : el("span", {}, ...holders.map((h) => el("span", { class: "pill holder", "data-client": h.client },
      `${h.client} holds `, el("code", { class: "key", text: h.key }),
      h.until_ms >= 0 ? ` until ${fmtClock(h.until_ms)}` : " (no expiry)"))));
  $("#explore-resource").textContent = fr.resource ? "resource: " + fr.resource : "";
  renderActions(st, fr);
  renderLanes(st, k);
  renderVerdict(st, fr, k);
  renderFindControls();
}

function renderVerdict(st, fr, k) {
  const verdict = $("#explore-verdict");
  if (explore.playing || explore.finding) return;
  const vs = fr.violations || [];
  const refused = (st.notes || []).slice(0, k).map((n, i) => ({ n, i })).filter((x) => x.n.fence_refused);
  const unpromised = new Set((st.judged || []).filter((j) => j.judged === "not_promised").map((j) => j.property));
  if (vs.length > 0) {
    // A property the lock does not promise, broken alone, is shown as
    // such: not as a bug of the lock.
    verdict.className = vs.every((v) => unpromised.has(v.property)) ? "verdict unpromised" : "verdict bad";
    const found = k === st.steps.length && explore.found ? " " + explore.found : "";
    const why = (v) => unpromised.has(v.property)
      ? ` What a lease lock without fencing does not promise: ${(st.judged.find((j) => j.property === v.property) || {}).why}.` : "";
    verdict.replaceChildren(...keyNodes(vs.map((v) => `Step ${v.step + 1}: ${exploreProperties[v.property] || propertyName(v.property)}.` +
      (v.message ? " " + sentence(v.message) : "") + why(v)).join(" ") + found),
      ...(fr.chains || []).map(chainList));
  } else if (refused.length > 0) {
    verdict.className = "verdict fenced";
    const who = refused.map((x) => `at step ${x.i + 1}, ${st.steps[x.i].action.client}`).join("; ");
    verdict.replaceChildren(`The fence stopped it: ${who}, whose hold had ended, tried to write, and the ` +
      `fence refused the write (amber), so no update was lost. ` + (fr.complete ? "Every client is done; no property broke." : ""));
  } else if (fr.complete) {
    verdict.className = "verdict ok";
    verdict.textContent = "Every client is done; no property broke.";
  } else if (!verdict.dataset.found || k < st.steps.length) {
    verdict.className = "verdict";
    verdict.textContent = k < st.steps.length ? `Step ${k} of ${st.steps.length}: nothing broken yet.` : "";
  }
}

// sentence is s as a sentence: a capital first, a full stop last.
function sentence(s) {
  s = String(s).trim();
  if (s === "") return s;
  return s[0].toUpperCase() + s.slice(1) + (/[.!?]$/.test(s) ? "" : ".");
}

// propertyName is a property in words, not its name in the API.
function propertyName(p) {
  return String(p).replace(/_/g, " ");
}

// chainList is a broken property's causal chain: the steps that led to
// it, in order, each naming its client and its step by the number the
// lanes' badges show.
function chainList(c) {
  return el("div", { class: "chain-why", "data-property": c.property },
    el("b", { text: `Why (${propertyName(c.property)}): the steps that led to it, in order` }),
    el("ol", {}, ...c.links.map((l) => el("li", { "data-step": String(l.step) },
      el("span", { class: "muted", text: `step ${l.step + 1}: ` }), ...keyNodes(l.text)))));
}

function renderActions(st, fr) {
  const byClient = new Map();
  for (const c of st.clients) byClient.set(c, []);
  const shared = [];
  for (const a of fr.enabled) {
    if (a.kind === "tick") shared.push(a);
    else {
      if (!byClient.has(a.client)) byClient.set(a.client, []);
      byClient.get(a.client).push(a);
    }
  }
  const busy = explore.playing || explore.finding;
  const button = (a) => el("button", {
    type: "button", class: a.kind === "run" || a.kind === "start" ? "run" : a.kind === "tick" ? "tick" : "fault",
    "data-kind": a.kind, "data-client": a.client || "", "data-command": a.command || "", "data-length": a.length || "",
    disabled: busy, text: a.kind === "tick" ? tickLabel(a, fr) : actionLabel(a),
    onclick: () => act(a).catch(() => {}),
  });
  const views = new Map((fr.views || []).map((v) => [v.client, v]));
  const boxes = [...byClient].map(([c, acts]) => el("div", { class: "explore-client", "data-client": c },
    el("h4", { text: `client ${c}` }),
    views.has(c) ? clientView(views.get(c), fr) : null,
    acts.length === 0 ? el("span", { class: "gone", text: clientGone(st, c) })
      : el("div", { class: "buttons" }, ...acts.map(button))));
  if (shared.length > 0) {
    boxes.push(el("div", { class: "explore-client", "data-client": "" },
      el("h4", { text: "time (leases run out on this clock)" }), el("div", { class: "buttons" }, ...shared.map(button))));
  }
  $("#explore-actions").replaceChildren(...boxes);
}

// clientView is what a client knows and believes in the slider's frame:
// its status, the token it holds, whether it believes it holds the lock,
// its lease as a bar running down on the virtual clock, what it read and
// wrote.
function clientView(v, fr) {
  const rows = [];
  const believes = v.believes_held;
  const live = believes && (v.lease_until_ms < 0 || v.lease_until_ms > fr.clock_ms);
  rows.push(el("div", { class: "cv-status", "data-believes": String(believes) },
    el("b", { text: v.status }),
    believes ? ` · believes it holds the lock with token ${v.token || "?"}` + (v.fence ? `, fence ${v.fence}` : "") : " · holds nothing"));
  if (believes) {
    let left = 1;
    let text = "lease: no expiry";
    if (v.lease_until_ms >= 0) {
      left = Math.max(0, Math.min(1, (v.lease_until_ms - fr.clock_ms) / v.lease_ms));
      text = live ? `lease: ${fmtClock(v.lease_until_ms - fr.clock_ms)} left (until ${fmtClock(v.lease_until_ms)})`
        : `lease ran out at ${fmtClock(v.lease_until_ms)}: ${v.client} does not know`;
    }
    rows.push(el("div", { class: "cv-lease" + (live ? "" : " gone"), "data-left": left.toFixed(3) },
      el("div", { class: "cv-bar", role: "img", "aria-label": text }, el("span", { style: `width: ${(left * 100).toFixed(1)}%` })),
      el("span", { text })));
  }
  if (v.status === "paused" && v.paused_until_ms) {
    rows.push(el("div", { class: "cv-line", text: v.paused_until_ms < 0 ? "paused for good" : `paused until ${fmtClock(v.paused_until_ms)}` }));
  }
  rows.push(el("div", { class: "cv-line" }, "read: ", v.read ? el("code", { text: v.read }) : "nothing yet"));
  if (v.wrote) rows.push(el("div", { class: "cv-line" }, "wrote: ", el("code", { text: v.wrote })));
  return el("div", { class: "client-view", "data-client": v.client, "data-token": v.token || "", "data-believes": String(believes) }, ...rows);
}

function clientGone(st, c) {
  const last = [...st.steps.slice(0, explore.view)].reverse().find((s) => s.action.client === c);
  if (last && last.action.kind === "crash") return "crashed";
  if (last && last.action.kind === "pause") return "paused";
  return "nothing to send now (done, or asleep until time passes)";
}

// renderLanes draws one row per step, in its client's lane; steps after
// the slider's frame are faded; a step that broke a property is lit.
function renderLanes(st, upto) {
  const lanes = $("#explore-lanes");
  const clients = st.clients;
  lanes.style.gridTemplateColumns = `90px repeat(${clients.length}, minmax(0, 1fr))`;
  const broke = new Map();
  for (const v of st.violations || []) broke.set(v.step, v);
  const fr = st.frames[upto];
  const chain = new Map();
  for (const c of (fr && fr.chains) || []) c.links.forEach((l, n) => chain.set(l.step, n + 1));
  const notes = st.notes || [];
  const cells = [el("div", { class: "lab-head muted", text: "clock" }),
    ...clients.map((c) => el("div", { class: "lab-head", text: `client ${c}` }))];
  st.steps.forEach((s, i) => {
    const v = broke.get(i) || (s.violation ? { property: s.violation, message: "" } : null);
    const col = s.action.kind === "tick" ? -1 : clients.indexOf(s.action.client);
    let cls = "lab-step" + (s.action.kind === "tick" ? " tick" : s.action.kind === "run" || s.action.kind === "start" ? "" : " fault");
    const note = notes[i];
    if (v) cls += " marked";
    else if (note && note.fence_refused) cls += " refused";
    if (chain.has(i) && i < upto) cls += " chain";
    if (i >= upto) cls += " future";
    const body = el("div", { class: cls, "data-step": String(i), "data-kind": s.action.kind, "data-client": s.action.client || "",
      "data-property": v ? v.property : "", "data-chain": chain.has(i) && i < upto ? String(chain.get(i)) : "",
      style: chain.has(i) ? `--chain-delay: ${(chain.get(i) - 1) * 0.3}s` : "" },
      chain.has(i) && i < upto ? el("span", { class: "chain-no", "aria-hidden": "true", text: String(i + 1) }) : null,
      el("span", { class: "say" }, ...keyNodes(note ? note.say : s.text)),
      note ? el("span", { class: "cmd" }, ...keyNodes(note.text || s.text)) : null,
      v ? el("span", { class: "why" }, `!! ${propertyName(v.property)} broke` + (v.message ? `: ${v.message}` : "")) : null);
    cells.push(el("div", { class: "lab-time muted", text: fmtClock(s.clock_ms) }));
    if (col < 0) {
      body.style.gridColumn = `2 / span ${clients.length}`;
      cells.push(body);
    } else {
      for (let k = 0; k < clients.length; k++) cells.push(k === col ? body : el("div", { class: "lab-idle" }));
    }
  });
  lanes.replaceChildren(...cells);
}

// scrub moves the whole view to the slider's frame.
function scrub() {
  explore.view = Number($("#explore-slider").value);
  $("#explore-verdict").dataset.found = "";
  renderFrame();
}

// keepAlive reads the session now and then, in a tab in the background
// too, so that the server's idle timer (45 s) ends only the sessions of
// tabs that are gone; it says so when the session has ended.
async function keepAlive() {
  if (!explore.id || explore.finding) return;
  try {
    await api("GET", `/api/explore/sessions/${explore.id}`);
  } catch (e) {
    if (e.status === 404) {
      explore.id = "";
      sessionStorage.removeItem(exploreSessionKey);
      exploreError("", new ApiError(404, "not_found", sessionEnded));
    }
  }
}

const sessionEnded = "This tab's explorer session has ended (unused too long, or the service restarted). " +
  "What you typed is still here: press Start for another session.";

// reattach shows the session this tab had before a reload, if the server
// still has it, and follows its search if one runs; it says so plainly
// if the session has ended. A closed tab's session ends on the server's
// idle timer: the page cannot tell a reload from a close as it goes.
async function reattach() {
  const id = sessionStorage.getItem(exploreSessionKey);
  if (!id) return;
  try {
    const st = await api("GET", `/api/explore/sessions/${id}`);
    explore.id = id;
    showSession(st);
    $("#explore-session").dataset.reattached = "true";
    if (st.find && st.find.state === "running") {
      explore.finding = true;
      renderExplore(st, st.find.from_step);
      showFind(st.find);
      explore.findTimer = setTimeout(pollFind, explore.pollMS);
    }
  } catch (e) {
    if (e.status !== 404) {
      exploreError("reattaching to this tab's session (reload to try again)", e);
      return;
    }
    sessionStorage.removeItem(exploreSessionKey);
    exploreError("", new ApiError(404, "not_found", sessionEnded));
  }
}

$("#explore-form").addEventListener("submit", startExplore);
$("#explore-undo").addEventListener("click", undo);
$("#explore-find").addEventListener("click", findBug);
$("#explore-cancel").addEventListener("click", cancelFind);
$("#explore-slider").addEventListener("input", scrub);
setInterval(keepAlive, explore.keepAliveMS);
buildLuaPanel();
loadExploreTargets().then(reattach);
