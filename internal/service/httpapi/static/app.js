// The lockmarket demo page: plain JavaScript over the JSON API, nothing
// fetched from anywhere else.
"use strict";

const $ = (sel) => document.querySelector(sel);

// el builds an element; text is always set as text, never as HTML.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else if (k in e) e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

// ApiError carries the API's error code and message.
class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The admin token, when the service requires one for the routes that change
// it (strategy, rush, lab): asked for once, on the first 401, and kept for
// this tab only.
const tokenKey = "lockmarket.admin_token";

// api sends one request and returns its JSON answer. With limitMS, the
// request, its answer included, is abandoned after that many
// milliseconds (an ApiError with status 0 and code "timeout"), so that a
// request the browser holds unsent or the service never answers does not
// hold its caller.
async function api(method, path, body, limitMS) {
  const ctl = limitMS ? new AbortController() : null;
  const timer = ctl ? setTimeout(() => ctl.abort(), limitMS) : null;
  const timedOut = () => new ApiError(0, "timeout", `no answer within ${limitMS / 1000} s`);
  try {
    let res;
    for (let asked = false; ; asked = true) {
      const headers = body === undefined ? {} : { "Content-Type": "application/json" };
      const token = sessionStorage.getItem(tokenKey);
      if (token) headers.Authorization = "Bearer " + token;
      try {
        res = await fetch(path, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: ctl ? ctl.signal : undefined,
        });
      } catch (e) {
        if (ctl && ctl.signal.aborted) throw timedOut();
        throw new ApiError(0, "network_error", "the service cannot be reached: " + e.message);
      }
      if (res.status !== 401 || asked) break;
      const given = window.prompt("This action needs the service's admin token:");
      if (!given) break;
      sessionStorage.setItem(tokenKey, given);
    }
    let data = null;
    try { data = await res.json(); } catch (e) { /* not JSON */ }
    if (ctl && ctl.signal.aborted) throw timedOut();
    if (!res.ok) {
      const err = data && data.error ? data.error : { code: "http_" + res.status, message: res.statusText };
      throw new ApiError(res.status, err.code, err.message);
    }
    return data;
  } finally {
    clearTimeout(timer);
  }
}

// retrying runs load, one of the page's first loads (the service's info,
// the market and the users, the recipes), until it succeeds. When many
// pages load at once (a class of 40), a request may find no answer or a
// busy service: such a failure (no answer, 429, 5xx) is tried again after
// 1, 2, 4 ... up to 15 s, and #retrying says what and when meanwhile;
// any other failure is the caller's to show. Each try is given a time
// limit, load(limitMS): 10 s, then twice the last up to a minute, so that
// a request that neither answers nor fails counts as a failure and is
// tried again. document.body's data-retries counts the tries again, for
// the page's tests.
const retryWaits = new Map(); // what is being retried -> its line
let retries = 0;
const firstLoadLimitMS = 10000;

function showRetrying() {
  const r = $("#retrying");
  r.textContent = [...retryWaits.values()].join(" ");
  r.hidden = retryWaits.size === 0;
}

async function retrying(what, load) {
  for (let n = 1; ; n++) {
    try {
      const v = await load(Math.min(firstLoadLimitMS * 2 ** (n - 1), 60000));
      retryWaits.delete(what);
      showRetrying();
      return v;
    } catch (e) {
      const again = !(e instanceof ApiError) || e.status === 0 || e.status === 429 || e.status >= 500;
      if (!again) {
        retryWaits.delete(what);
        showRetrying();
        throw e;
      }
      const wait = Math.min(1000 * 2 ** (n - 1), 15000);
      const why = String(e.message || "").trim().replace(/\.$/, "") || "it failed";
      retryWaits.set(what, `Loading ${what} failed (${why}); trying again in ${wait / 1000} s.`);
      showRetrying();
      document.body.dataset.retries = String(++retries);
      await new Promise((done) => setTimeout(done, wait));
    }
  }
}

// labScenarios is the recipes and faults the lab and the explorer offer,
// asked for once by the page and retried as a first load.
let scenariosLoad = null;
function labScenarios() {
  if (!scenariosLoad) {
    scenariosLoad = retrying("the recipes", (limit) => api("GET", "/api/lab/scenarios", undefined, limit));
    scenariosLoad.catch(() => { scenariosLoad = null; });
  }
  return scenariosLoad;
}

// errorText is an error in words for the person: what was being done and
// the service's message; the API's code, a name for programs, is kept
// out of sight (data-code).
function errorText(what, err) {
  const msg = String(err.message || "").trim();
  return (what ? what + ": " : "") + (msg || "it failed") + (/[.!?)]$/.test(msg) ? "" : ".");
}

// showError puts an error in front of the person; they dismiss it.
function showError(what, err) {
  const box = $("#errors");
  const code = err instanceof ApiError ? err.code : "error";
  const item = el("div", { class: "error", "data-code": code },
    el("span", { text: errorText(what, err) }),
    el("button", { type: "button", title: "dismiss", "aria-label": "dismiss this error", text: "×", onclick: () => item.remove() }));
  box.prepend(item);
  while (box.children.length > 5) box.lastChild.remove();
}

// keepTyped restores what was typed into control e before a reload of
// this tab, and keeps it as it changes (sessionStorage: this tab only).
// Checkboxes are kept by name and value, other controls by id.
const typedKey = "lockmarket.typed";

function typedValues() {
  try { return JSON.parse(sessionStorage.getItem(typedKey) || "{}") || {}; } catch (e) { return {}; }
}

function keepTyped(e) {
  const box = e.type === "checkbox";
  const key = box ? `${e.name || e.id}=${e.value}` : e.id;
  const saved = typedValues()[key];
  if (saved !== undefined && box) e.checked = saved === true;
  else if (saved !== undefined && (e.tagName !== "SELECT" || [...e.options].some((o) => o.value === saved))) e.value = saved;
  const save = () => {
    const v = typedValues();
    v[key] = box ? e.checked : e.value;
    try { sessionStorage.setItem(typedKey, JSON.stringify(v)); } catch (err) { /* storage refused: not kept */ }
  };
  e.addEventListener("input", save);
  e.addEventListener("change", save);
}

function note(text, ok) {
  const n = $("#last-op");
  n.textContent = text;
  n.className = ok ? "note ok" : "note";
}

const fmt = (n) => Number(n).toLocaleString("en-US");
const ms = (x) => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
const costText = (r) => `${r.strategy}: ${r.retries} retries, ${r.lock_waits} lock waits, ${ms(r.wait_ms)} ms`;

// ---- state and rendering ----

const state = { users: [], listings: [], total: 0, strategy: "", funds: new Map() };

// loadLists reads the market and the users and draws them; limitMS, if
// set, is each request's time limit (api).
async function loadLists(limitMS) {
  const [m, u] = await Promise.all([api("GET", "/api/market?limit=100", undefined, limitMS),
    api("GET", "/api/users?limit=500", undefined, limitMS)]);
  state.listings = m.listings;
  state.total = m.total;
  state.users = u.users;
  renderMarket();
  renderUsers();
}

async function refresh() {
  try {
    await loadLists();
  } catch (e) {
    showError("refresh", e);
  }
}

// reconcile makes nodes the children of parent, touching only what
// differs: a kept child is neither removed nor moved, so it keeps its
// focus and whatever is typed in it.
function reconcile(parent, nodes) {
  nodes.forEach((n, i) => {
    if (parent.children[i] !== n) parent.insertBefore(n, parent.children[i] || null);
  });
  while (parent.children.length > nodes.length) parent.lastElementChild.remove();
}

// renderMarket updates the market's rows in place: a row whose listing is
// unchanged is kept as it is, so a focused Buy button keeps its focus
// through the refresh.
function renderMarket() {
  const tbody = $("#market tbody");
  const old = new Map([...tbody.children].map((tr) => [tr.dataset.listing, tr]));
  reconcile(tbody, state.listings.map((l) => {
    const key = l.item + "." + l.seller;
    const tr = old.get(key);
    if (tr && tr.dataset.price === String(l.price)) return tr;
    return el("tr", { "data-listing": key, "data-price": String(l.price) },
      el("td", { text: l.item }),
      el("td", { text: l.seller }),
      el("td", { class: "num", text: fmt(l.price) }),
      el("td", { class: "num" }, el("button", {
        type: "button", class: "buy", text: "Buy", "aria-label": `Buy ${l.item} from ${l.seller} for ${fmt(l.price)}`,
        "data-item": l.item, "data-seller": l.seller, "data-price": String(l.price),
        onclick: (ev) => buy(ev.currentTarget, l),
      })));
  }));
  $("#market-total").textContent = state.total > state.listings.length
    ? `${state.listings.length} of ${state.total}, cheapest first` : `${state.total} listed, cheapest first`;
  $("#market-empty").hidden = state.total > 0;

  const sel = $("#buyer");
  const current = sel.value;
  const buyers = state.users;
  const options = buyers.map((u) => `${u.id}\u0000${u.name} (${fmt(u.funds)})`).join("\n");
  if (sel.dataset.options !== options) {
    sel.replaceChildren(...buyers.map((u) => el("option", { value: u.id, text: `${u.name} (${fmt(u.funds)})` })));
    sel.dataset.options = options;
    if (buyers.some((u) => u.id === current)) sel.value = current;
  }
}

// renderUsers updates the user cards in place: an unchanged card is kept,
// and a changed one keeps the price being typed in it and its focus.
function renderUsers() {
  $("#users-total").textContent = `${state.users.length}`;
  const box = $("#users");
  const old = new Map([...box.children].map((c) => [c.dataset.user, c]));
  const focused = document.activeElement;
  reconcile(box, state.users.map((u) => {
    const sig = JSON.stringify([u.name, u.funds, [...(u.inventory || [])].sort()]);
    const card = old.get(u.id);
    if (card && card.dataset.sig === sig) return card;
    const fresh = userCard(u);
    fresh.dataset.sig = sig;
    if (card) {
      const price = card.querySelector("input.price"), item = card.querySelector("select");
      const nprice = fresh.querySelector("input.price"), nitem = fresh.querySelector("select");
      if (price && nprice) nprice.value = price.value;
      if (item && nitem && [...nitem.options].some((o) => o.value === item.value)) nitem.value = item.value;
      if (card.contains(focused)) {
        const same = focused === price ? nprice : focused === item ? nitem : fresh.querySelector("button");
        queueMicrotask(() => same && same.focus());
      }
    }
    return fresh;
  }));
}

function userCard(u) {
  const before = state.funds.get(u.id);
  state.funds.set(u.id, u.funds);
  const inv = [...(u.inventory || [])].sort();
  const shown = inv.slice(0, 12);
  const card = el("div", { class: "user", id: "user-" + u.id, "data-user": u.id },
    el("div", { class: "top" },
      el("span", {}, el("span", { class: "name", text: u.name }), el("span", { class: "id", text: u.id })),
      el("span", { class: before !== undefined && before !== u.funds ? "funds changed" : "funds",
        title: "funds", text: fmt(u.funds) })),
    el("div", { class: "inv" },
      ...shown.map((it) => el("span", { class: "chip", "data-item": it, text: it })),
      inv.length > shown.length ? el("span", { class: "chip more", text: `+${inv.length - shown.length} more` }) : null,
      inv.length === 0 ? el("span", { class: "muted", text: "no items" }) : null));
  if (inv.length > 0) {
    const item = el("select", { "aria-label": `${u.name}'s item to list` }, ...inv.map((it) => el("option", { value: it, text: it })));
    const price = el("input", { type: "number", min: "1", step: "1", placeholder: "price", class: "price", "aria-label": `price for ${u.name}'s listing` });
    card.append(el("form", { class: "sell", onsubmit: (ev) => { ev.preventDefault(); sell(u.id, item.value, price.value, ev.submitter); } },
      item, price, el("button", { type: "submit", text: "List", "aria-label": `List ${u.name}'s item` })));
  }
  return card;
}

// ---- actions ----

async function buy(button, l) {
  const buyer = $("#buyer").value;
  if (!buyer) { showError("buy", new ApiError(0, "no_buyer", "add a user first")); return; }
  button.disabled = true;
  try {
    const r = await api("POST", "/api/purchases", { buyer, seller: l.seller, item: l.item, price: l.price });
    note(`${buyer} bought ${l.item} from ${l.seller} for ${fmt(l.price)} (${costText(r)})`, true);
  } catch (e) {
    showError(`buying ${l.item} from ${l.seller}`, e);
  }
  await refresh();
}

async function sell(seller, item, price, button) {
  const p = Number(price);
  if (!Number.isInteger(p) || p < 1) { showError("list", new ApiError(0, "invalid_request", "enter a whole positive price")); return; }
  if (button) button.disabled = true;
  try {
    const r = await api("POST", "/api/listings", { seller, item, price: p });
    note(`${seller} listed ${item} for ${fmt(p)} (${costText(r)})`, true);
  } catch (e) {
    showError(`listing ${item}`, e);
  }
  await refresh();
}

function renderStrategy(s) {
  state.strategy = s;
  for (const b of document.querySelectorAll("#strategy button")) {
    b.setAttribute("aria-checked", String(b.dataset.strategy === s));
  }
}

async function setStrategy(s) {
  try {
    const r = await api("PUT", "/api/strategy", { strategy: s });
    renderStrategy(r.strategy);
    note(`the demo market's strategy is now ${r.strategy}: Buy and List use it`, true);
  } catch (e) {
    showError("switching strategy", e);
  }
}

async function addUser(ev) {
  ev.preventDefault();
  const name = $("#new-user-name").value.trim();
  const funds = Number($("#new-user-funds").value);
  try {
    const u = await api("POST", "/api/users", { name, funds });
    note(`created user ${u.name} (${u.id})`, true);
    $("#new-user").reset();
  } catch (e) {
    showError("adding user", e);
  }
  await refresh();
}

// health shows whether the service reaches Redis; a service that does
// not answer within the first loads' time limit is shown as such, and
// holds nothing up.
async function health() {
  const h = $("#health");
  try {
    await api("GET", "/healthz", undefined, firstLoadLimitMS);
    h.textContent = "Redis OK";
    h.className = "pill ok";
  } catch (e) {
    h.textContent = e.code === "timeout" ? "no answer" : "Redis down";
    h.title = e.message;
    h.dataset.code = e.code || "";
    h.className = "pill bad";
  }
}

// ---- start ----

// The page refreshes the market and the users every refreshMS;
// setRefreshInterval changes it (a test runs the same refresh faster).
const refreshMS = 3000;
let refreshTimer = null;
let refreshes = 0;
function refreshNow() {
  if (document.hidden) return; // a tab in the background asks for nothing, and catches up when shown
  refreshes++;
  refresh();
  health();
}
function setRefreshInterval(msv) {
  clearInterval(refreshTimer);
  refreshTimer = setInterval(refreshNow, msv);
}

// Projector mode: larger text, timelines and chart, for a room; kept in
// this browser's storage.
const projectorKey = "lockmarket.projector";

function setProjector(on) {
  document.documentElement.classList.toggle("projector", on);
  $("#projector").setAttribute("aria-pressed", String(on));
  try {
    localStorage.setItem(projectorKey, on ? "on" : "off");
  } catch (e) { /* storage refused: the mode lasts for this page */ }
}

async function start() {
  let projector = false;
  try { projector = localStorage.getItem(projectorKey) === "on"; } catch (e) { /* no storage */ }
  setProjector(projector);
  $("#projector").addEventListener("click", () => setProjector(!document.documentElement.classList.contains("projector")));
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refreshNow(); });
  for (const b of document.querySelectorAll("#strategy button")) {
    b.addEventListener("click", () => setStrategy(b.dataset.strategy));
  }
  $("#new-user").addEventListener("submit", addUser);
  try {
    const info = await retrying("the service's info", (limit) => api("GET", "/api/info", undefined, limit));
    renderStrategy(info.strategy);
    const redis = info.redis.mode ? `${info.redis.mode} ${info.redis.version}`.trim() : "Redis";
    $("#info").textContent = `market “${info.market}” on ${redis}`;
    if (info.redis.mode === "miniredis") {
      $("#illustrative").hidden = false;
      $("#rush-illustrative").hidden = false;
      document.body.dataset.illustrative = "true";
    }
  } catch (e) {
    showError("loading", e);
  }
  await Promise.all([retrying("the market and the users", loadLists).catch((e) => showError("refresh", e)), health()]);
  document.body.dataset.ready = "true";
  refreshTimer = setInterval(refreshNow, refreshMS);
}

start();
