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

async function api(method, path, body) {
  let res;
  try {
    res = await fetch(path, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, "network_error", "the service cannot be reached: " + e.message);
  }
  let data = null;
  try { data = await res.json(); } catch (e) { /* not JSON */ }
  if (!res.ok) {
    const err = data && data.error ? data.error : { code: "http_" + res.status, message: res.statusText };
    throw new ApiError(res.status, err.code, err.message);
  }
  return data;
}

// showError puts an error in front of the person; they dismiss it.
function showError(what, err) {
  const box = $("#errors");
  const code = err instanceof ApiError ? err.code : "error";
  const item = el("div", { class: "error" },
    el("span", {}, what + ": ", el("code", { text: code }), " " + err.message),
    el("button", { type: "button", title: "dismiss", text: "×", onclick: () => item.remove() }));
  box.prepend(item);
  while (box.children.length > 5) box.lastChild.remove();
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

async function refresh() {
  try {
    const [m, u] = await Promise.all([api("GET", "/api/market?limit=100"), api("GET", "/api/users?limit=500")]);
    state.listings = m.listings;
    state.total = m.total;
    state.users = u.users;
    renderMarket();
    renderUsers();
  } catch (e) {
    showError("refresh", e);
  }
}

const isRushUser = (u) => u.id.startsWith("rush-");

function renderMarket() {
  const tbody = $("#market tbody");
  tbody.replaceChildren(...state.listings.map((l) => el("tr", { "data-listing": l.item + "." + l.seller },
    el("td", { text: l.item }),
    el("td", { text: l.seller }),
    el("td", { class: "num", text: fmt(l.price) }),
    el("td", { class: "num" }, el("button", {
      type: "button", class: "buy", text: "Buy",
      "data-item": l.item, "data-seller": l.seller, "data-price": String(l.price),
      onclick: (ev) => buy(ev.target, l),
    })))));
  $("#market-total").textContent = state.total > state.listings.length
    ? `${state.listings.length} of ${state.total}, cheapest first` : `${state.total} listed, cheapest first`;
  $("#market-empty").hidden = state.total > 0;

  const sel = $("#buyer");
  const current = sel.value;
  const buyers = state.users.filter((u) => !isRushUser(u));
  sel.replaceChildren(...buyers.map((u) => el("option", { value: u.id, text: `${u.name} (${fmt(u.funds)})` })));
  if (buyers.some((u) => u.id === current)) sel.value = current;
}

function renderUsers() {
  const showRush = $("#show-rush").checked;
  const users = state.users.filter((u) => showRush || !isRushUser(u));
  $("#users-total").textContent = `${users.length} shown of ${state.users.length}`;
  $("#users").replaceChildren(...users.map(userCard));
}

function userCard(u) {
  const before = state.funds.get(u.id);
  state.funds.set(u.id, u.funds);
  const inv = u.inventory || [];
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
    const item = el("select", { "aria-label": "item to list" }, ...inv.map((it) => el("option", { value: it, text: it })));
    const price = el("input", { type: "number", min: "1", step: "1", placeholder: "price", "aria-label": "price" });
    card.append(el("form", { class: "sell", onsubmit: (ev) => { ev.preventDefault(); sell(u.id, item.value, price.value, ev.submitter); } },
      item, price, el("button", { type: "submit", text: "List" })));
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
    note(`default strategy is now ${r.strategy}`, true);
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

async function health() {
  const h = $("#health");
  try {
    await api("GET", "/healthz");
    h.textContent = "Redis OK";
    h.className = "pill ok";
  } catch (e) {
    h.textContent = "Redis " + (e.code || "down");
    h.className = "pill bad";
  }
}

// ---- rush ----

function percentile(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
}
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);
const pair = (xs) => (xs.length ? `${ms(mean(xs))} / ${ms(percentile(xs, 99))}` : "–");

function rushRow(s) {
  const cells = {};
  const td = (name, cls) => (cells[name] = el("td", { class: (cls || "") + " " + name, text: "0" }));
  const row = el("tr", { id: "rush-" + s, class: "running" },
    el("td", { class: "strategy", text: s }),
    td("sent", "num"), td("done", "num"), td("ok", "num"), td("fails"),
    td("retries", "num"), td("lockwaits", "num"), td("wait-ok", "num"), td("round-trip", "num"));
  cells.fails.textContent = "–";
  return { row, cells };
}

function renderRush(r) {
  const c = r.cells;
  c.sent.textContent = fmt(r.sent);
  c.done.textContent = fmt(r.done);
  c.ok.textContent = fmt(r.ok);
  c.retries.textContent = fmt(r.retries);
  c.lockwaits.textContent = fmt(r.lockWaits);
  c["wait-ok"].textContent = pair(r.waitOK);
  c["round-trip"].textContent = pair(r.roundTrip);
  const fails = Object.entries(r.fails).sort((a, b) => b[1] - a[1]);
  c.fails.replaceChildren(...(fails.length ? fails.map(([code, n]) => el("span", { class: "fail", text: `${code} ×${n}` })) : ["–"]));
}

// ensureUser creates a rush user unless it exists.
async function ensureUser(id, name, funds) {
  try {
    await api("POST", "/api/users", { id, name, funds });
  } catch (e) {
    if (e.code !== "already_exists") throw e;
  }
}

async function rushOne(s, n, nBuyers, nListings, runID) {
  const r = { sent: 0, done: 0, ok: 0, retries: 0, lockWaits: 0, fails: {}, waitOK: [], roundTrip: [], ...rushRow(s) };
  $("#rush-results tbody").append(r.row);
  // Prepare: buyers with ample funds, a seller, and fresh items listed under s.
  const buyers = [];
  for (let i = 1; i <= nBuyers; i++) buyers.push("rush-b" + i);
  await Promise.all(buyers.map((b) => ensureUser(b, "Rush buyer " + b.slice(6), 1000000000)));
  await ensureUser("rush-seller", "Rush seller", 0);
  const listings = [];
  for (let j = 0; j < nListings; j++) {
    const item = `r${runID}-${s}-${j + 1}`;
    await api("POST", "/api/users/rush-seller/inventory", { item });
    const l = await api("POST", "/api/listings?strategy=" + s, { seller: "rush-seller", item, price: 10 + j });
    listings.push(l);
  }
  // Fire: every purchase at once; the browser queues what it cannot send.
  const shots = [];
  for (let i = 0; i < n; i++) {
    const l = listings[i % listings.length];
    const body = { buyer: buyers[i % buyers.length], seller: l.seller, item: l.item, price: l.price };
    r.sent++;
    const t0 = performance.now();
    shots.push(api("POST", "/api/purchases?strategy=" + s, body).then((res) => {
      r.ok++;
      r.retries += res.retries;
      r.lockWaits += res.lock_waits;
      r.waitOK.push(res.wait_ms);
    }, (e) => {
      r.fails[e.code] = (r.fails[e.code] || 0) + 1;
      if (e.status === 0 || e.status >= 500) showError(`rush purchase (${s})`, e);
    }).finally(() => {
      r.roundTrip.push(performance.now() - t0);
      r.done++;
      renderRush(r);
    }));
  }
  renderRush(r);
  await Promise.all(shots);
  r.row.classList.remove("running");
}

async function rush(ev) {
  ev.preventDefault();
  const n = Number($("#rush-n").value), nb = Number($("#rush-buyers").value), nl = Number($("#rush-listings").value);
  const strategies = [...document.querySelectorAll("input[name=rush-strategy]:checked")].map((i) => i.value);
  if (strategies.length === 0) { showError("rush", new ApiError(0, "invalid_request", "pick at least one strategy")); return; }
  if (![n, nb, nl].every((x) => Number.isInteger(x) && x > 0)) { showError("rush", new ApiError(0, "invalid_request", "counts must be whole positive numbers")); return; }
  const run = $("#rush-run");
  run.disabled = true;
  $("#rush-results tbody").replaceChildren();
  const runID = Date.now().toString(36);
  const status = $("#rush-status");
  try {
    for (const s of strategies) {
      status.textContent = `running ${s}…`;
      await rushOne(s, n, nb, nl, runID);
    }
    status.textContent = "done";
  } catch (e) {
    status.textContent = "failed";
    showError("rush", e);
  }
  run.disabled = false;
  await refresh();
}

// ---- start ----

async function start() {
  for (const b of document.querySelectorAll("#strategy button")) {
    b.addEventListener("click", () => setStrategy(b.dataset.strategy));
  }
  $("#new-user").addEventListener("submit", addUser);
  $("#rush-form").addEventListener("submit", rush);
  $("#show-rush").addEventListener("change", renderUsers);
  try {
    const info = await api("GET", "/api/info");
    renderStrategy(info.strategy);
    const redis = info.redis.mode ? `${info.redis.mode} ${info.redis.version}`.trim() : "Redis";
    $("#info").textContent = `market “${info.market}” on ${redis}`;
  } catch (e) {
    showError("loading", e);
  }
  await Promise.all([refresh(), health()]);
  document.body.dataset.ready = "true";
  setInterval(() => { if ($("#rush-run").disabled) return; refresh(); health(); }, 3000);
}

start();
