// aqbench live page: the server renders its first HTML with the run's state (render.py); this script loads the
// state (/state, rebuilt from the journal), then applies the changes the server sends on /events (server-sent
// events; the browser resumes with Last-Event-ID). Read-only.
// Charts are plain SVG drawn here; every value is written as text, never as markup.
"use strict";

const CAP = 1000; // points per series, as the server's fold keeps them
const SVG = "http://www.w3.org/2000/svg";
let state = null;
let liveDropped = 0;
let reloads = 0;
let source = null;
let ended = false;
let pending = false;
let lastTs = 0;

function byId(id) { return document.getElementById(id); }
function fmt(v, digits) {
  if (v === null || v === undefined) return "-";
  if (typeof v !== "number") return String(v);
  // As orchestrator/base/figures.py writes figures: thousands grouped, never an exponent.
  if (Math.abs(v) >= 1000 || Number.isInteger(v)) return Math.round(v).toLocaleString("en-US");
  return v.toLocaleString("en-US", {maximumSignificantDigits: digits || 3});
}
function setText(id, v) { const el = byId(id); if (el) el.textContent = v; }
function hms(s) {
  s = Math.max(0, Math.floor(s));
  return `${Math.floor(s / 3600)}:${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}

// ---------------------------------------------------------------------------------------- state

function thin(list) { return list.length > CAP ? list.filter((_, i) => i % 2 === 0) : list; }

function apply(change) {
  const [seq, op, section, value] = change;
  if (seq <= state.seq && section !== "live_dropped") return; // already in the state loaded from the journal
  if (section === "live_dropped") { liveDropped = value; return; }
  if (op === "set") state[section] = value;
  else if (op === "add") state[section] = thin([...state[section], value]);
  else if (op === "put") {
    const rows = state[section];
    const i = rows.findIndex((r) => r.name === value.name);
    if (i >= 0) rows[i] = value; else rows.push(value);
  }
}

async function load() {
  const resp = await fetch("/state", {cache: "no-store"});
  const body = await resp.json();
  state = body.state;
  liveDropped = body.live_dropped;
  render();
  listen();
}

function listen() {
  if (source) source.close();
  source = new EventSource(`/events?since=${state.seq}`);
  source.onopen = () => setText("link", "live");
  source.onerror = () => { if (!ended) setText("link", "connection lost; reconnecting…"); };
  source.addEventListener("changes", (e) => {
    const msg = JSON.parse(e.data);
    for (const ch of msg.changes) apply(ch);
    state.seq = Math.max(state.seq, msg.seq);
    lastTs = msg.ts_ns;
    schedule();
  });
  source.addEventListener("reload", () => {
    // The server's ring no longer holds what this page missed: reload the state from the journal.
    reloads += 1;
    source.close();
    load().catch(showError);
  });
  source.addEventListener("end", () => {
    ended = true;
    source.close();
    // The stream ends after the run's last word (RunFinished) set the final status; a run whose bus could
    // not close in time never says it, and the page says only that it ended.
    if (state.run.status === "running") state.run.status = "ended";
    setText("link", "the run has ended; this page shows its last state (the reports hold the final numbers)");
    render();
  });
}

function schedule() {
  if (pending) return;
  pending = true;
  setTimeout(() => { pending = false; render(); }, 200);
}

function showError(err) { setText("link", `cannot load the run's state: ${err}`); }

// ---------------------------------------------------------------------------------------- render

function row(table, cells, cls) {
  const tr = document.createElement("tr");
  cells.forEach((c, i) => {
    const td = document.createElement("td");
    td.textContent = c;
    if (cls && cls[i]) td.className = cls[i];
    tr.appendChild(td);
  });
  byId(table).tBodies[0].appendChild(tr);
}
function clear(table) { byId(table).tBodies[0].replaceChildren(); }
// A table with no rows says why (state.py's why_empty: "no checkpoint yet: the first at 30:00 under load").
function whyEmpty(table) {
  const body = byId(table).tBodies[0];
  if (body.rows.length) return;
  row(table, [state.run.empty[table] || "none yet"]);
  body.rows[0].className = "empty";
  body.rows[0].cells[0].colSpan = byId(table).tHead.rows[0].cells.length;
}

function renderGpus() {
  const mib = (b) => (b === null || b === undefined ? "-" : fmt(Math.round(b / 1048576)));
  byId("gpu-section").hidden = !state.gpus.length;
  clear("gpus");
  for (const g of state.gpus) {
    row("gpus", [g.name, fmt(g.utilization_percent), fmt(g.power_w), fmt(g.temperature_c), fmt(g.sm_clock_mhz),
      `${mib(g.memory_used_bytes)} / ${mib(g.memory_total_bytes)}`, g.notice ? "n/a" : mib(g.server_memory_bytes),
      g.throttle_reasons.join(", ") || "none", g.uuid || "-"]);
  }
  setText("gpu-notice", state.gpus.map((g) => g.notice).find((n) => n) || "");
}

function render() {
  const run = state.run;
  setText("command", run.command || "run");
  setText("run-id", run.run_id);
  const status = byId("status");
  status.textContent = run.status;
  status.className = `badge ${run.status}`;
  setText("reason", run.reason);
  const now = run.finished_unix_ns || Date.now() * 1e6;
  const elapsed = run.started_unix_ns ? (now - run.started_unix_ns) / 1e9 : 0;
  const frac = run.total ? Math.min(1, run.done / run.total) : 0;
  byId("progress-bar").style.width = `${(100 * frac).toFixed(1)}%`;
  const lag = lastTs ? ` · live lag ${((Date.now() * 1e6 - lastTs) / 1e9).toFixed(1)} s` : "";
  setText("progress-text", `${run.phase ? "phase " + run.phase + " · " : ""}` +
    `${run.total ? run.done + " of " + run.total + " " + run.unit + " · " : ""}elapsed ${hms(elapsed)}` +
    `${run.duration_s ? " of " + hms(run.duration_s) + " under load" : ""}${lag}`);

  const c = state.counters;
  setText("issued", fmt(c.issued)); setText("ok", fmt(c.ok)); setText("errors", fmt(c.errors));
  setText("in-flight", fmt(c.in_flight));
  setText("in-flight-source", state.in_flight.length ? "(server gauge)" : "(accounting)"); setText("warmup", fmt(c.warmup)); setText("unmatched", fmt(c.unmatched));
  const causes = Object.entries(c.by_cause).map(([k, n]) => `${k} ${n}`).join(", ");
  setText("by-cause", causes || "none");
  clear("error-kinds");
  const kinds = state.error_kinds || [];
  byId("error-kinds").hidden = !kinds.length;
  for (const k of kinds) {
    row("error-kinds", [k.http_status === null ? "none" : String(k.http_status), k.cause, fmt(k.count),
      k.kind || "-", k.example || "-"]);
  }
  setText("live-dropped", fmt(liveDropped));
  const dropped = Object.entries(state.dropped).map(([k, n]) => `${k} ${n}`).join(", ");
  setText("dropped", dropped || "none");
  setText("reloads", fmt(reloads));

  clear("verdicts");
  for (const v of state.verdicts) {
    row("verdicts", [v.name, v.outcome.toUpperCase(), v.final ? "final" : "checkpoint", fmt(v.estimate),
      v.interval ? `[${fmt(v.interval[0])}, ${fmt(v.interval[1])}]` : "-", fmt(v.limit), v.unit, v.detects, v.reason],
      [null, v.outcome]);
  }
  whyEmpty("verdicts");
  const s = state.server;
  setText("server-state", s.state || "-"); setText("incarnation", fmt(s.incarnation)); setText("restarts", fmt(s.restarts));
  list("restart-causes", s.causes.map((x) => `restart: ${x}`));
  list("server-exits", s.exits.map((x) => `unexpected exit: ${x}`));
  renderGpus();
  clear("windows");
  for (const w of state.windows) {
    row("windows", [w.name, w.state, fmt(w.issued), fmt(w.ok), fmt(w.errors),
      `${fmt(w.client_p50_ms)}/${fmt(w.client_p99_ms)}`, fmt(w.model_call_p50_ms),
      w.balanced === null ? "-" : w.balanced ? "balanced" : "NOT balanced"]);
  }
  whyEmpty("windows");
  byId("points-section").hidden = !state.points.length;
  clear("points");
  for (const p of state.points) {
    const why = p.slos.filter((c) => c.reason).map((c) => `${c.slo}: ${c.reason}`);
    if (!p.balanced) why.push("accounting did not balance");
    if (p.stopped_early) why.push("stopped early once an SLO clearly broke");
    row("points", [p.name, p.outcome.toUpperCase(), fmt(p.runs), fmt(p.requests), fmt(p.ok), fmt(p.achieved_rps),
      fmt(p.client_p99_ms), fmt(p.model_call_p99_ms), p.slos.map((c) => `${c.slo} ${c.outcome}`).join(", "),
      [...why, ...p.saturation].join("; ")], [null, p.outcome]);
  }
  byId("campaign-section").hidden = !state.campaign.length;
  clear("campaign");
  for (const m of state.campaign) {
    const verdicts = Object.entries(m.verdicts).map(([k, n]) => `${k} ${n}`).join(", ");
    row("campaign", [m.name, m.node || "-", fmt(m.attempt), m.stage || "-", m.state, fmt(m.issued), fmt(m.ok),
      fmt(m.errors), fmt(m.restarts), verdicts || "-", m.reason], [null, null, null, null, m.state]);
  }
  if (state.campaign.length) campaignCharts();
  // A campaign's own charts take the place of the run's (each model's report has its full ones).
  byId("run-charts").hidden = run.command === "campaign";
  clear("models");
  for (const m of state.models) row("models", [m.name, m.stage, m.state, m.reason]);
  whyEmpty("models");
  chart("latency-chart", "ms", [
    {name: "client latency", color: "#2f6db5", points: state.latency.filter((p) => p[1] !== null).map((p) => [p[0], p[1]])},
    {name: "model_call_ms (server)", color: "#c2571a", points: state.latency.filter((p) => p[3] !== null).map((p) => [p[0], p[3]])},
  ]);
  chart("in-flight-chart", "requests", [
    {name: "in flight (server)", color: "#7a3fb0", step: true, points: state.in_flight.map((p) => [p[0], p[1]])},
  ]);
  // [t_s, rss_bytes, gpu_memory_bytes, role] and [t_s, client_ms, handler_ms, model_call_ms] (state.py)
  const mem = (role) => state.memory.filter((p) => p[3] === role).map((p) => [p[0], p[1] / 1048576]);
  chart("memory-chart", "MiB", [
    {name: "server RSS", color: "#2f6db5", points: mem("server")},
    {name: "aqbench RSS", color: "#3a8f3a", points: mem("aqbench")},
    {name: "AIPerf tree RSS", color: "#c2571a", points: mem("aiperf")},
  ]);
}

// A campaign's charts: each model's requests as a bar, its latency and server memory as a line of its own.
const PALETTE = ["#2f6db5", "#c2571a", "#3a8f3a", "#7a3fb0", "#b53a5a", "#1a8f8f", "#8f7a1a", "#555555"];
function campaignCharts() {
  const color = (i) => PALETTE[i % PALETTE.length];
  const lines = (rows) => rows.map((r, i) => ({name: r.name, color: color(i), points: r.points}));
  bars("campaign-progress-chart", state.campaign);
  chart("campaign-latency-chart", "ms", lines(state.model_latency));
  chart("campaign-memory-chart", "MiB", lines(state.model_memory));
}

function bars(id, rows) {
  const W = 1000, L = 160, R = 220, BAR = 16, GAP = 8, T = 8;
  const H = T + rows.length * (BAR + GAP) + 20;
  const svg = el("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img"});
  const most = Math.max(1, ...rows.map((r) => r.issued));
  const sx = (n) => n / most * (W - L - R);
  rows.forEach((r, i) => {
    const y = T + i * (BAR + GAP);
    svg.appendChild(el("text", {x: L - 6, y: y + BAR - 3, "text-anchor": "end", "font-size": 12}, r.name));
    svg.appendChild(el("rect", {x: L, y, width: sx(r.ok).toFixed(1), height: BAR, fill: "#3a8f3a"},));
    svg.appendChild(el("rect", {x: (L + sx(r.ok)).toFixed(1), y, width: sx(r.errors).toFixed(1), height: BAR,
      fill: "#c23a3a"}));
    svg.appendChild(el("text", {x: L + sx(r.issued) + 6, y: y + BAR - 3, "font-size": 12},
      `${r.ok} ok, ${r.errors} errors · ${r.state}`));
  });
  svg.appendChild(el("text", {x: L, y: H - 4, "font-size": 11, fill: "#555"},
    "requests of the profiling phase (green ok, red errors); the longest bar is the model with the most"));
  byId(id).replaceChildren(svg);
}

function list(id, items) {
  const ul = byId(id);
  ul.replaceChildren(...items.map((t) => { const li = document.createElement("li"); li.textContent = t; return li; }));
}

// ---------------------------------------------------------------------------------------- charts

function el(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function niceStep(span, n) {
  const raw = span / n, mag = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
}

function chart(id, unit, series) {
  // The legend takes a row per four series (a campaign's chart has one series per model).
  const PER_ROW = 4, rows = Math.max(1, Math.ceil(series.length / PER_ROW));
  const W = 1000, L = 60, R = 10, T = 10 + 14 * rows, B = 30, H = 236 + T;
  const pts = series.flatMap((s) => s.points);
  const svg = el("svg", {viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img"});
  if (!pts.length) {
    svg.appendChild(el("text", {x: L, y: H / 2, fill: "#888"}, "no samples yet"));
    byId(id).replaceChildren(svg);
    return;
  }
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  // All samples at one instant: a one-second axis (x0 + 1e-9 rounds back to x0 far from zero, dividing by 0).
  const x0 = Math.min(...xs), x1 = Math.max(...xs) > x0 ? Math.max(...xs) : x0 + 1;
  // The axis spans whole steps of a round size (1, 2, 2.5 or 5 times a power of ten), so its ticks read 0, 1000,
  // 2000, never 1709 and 3418.
  const step = niceStep((Math.max(...ys) - Math.min(0, ...ys)) || 1, 4);
  const y0 = Math.floor(Math.min(0, ...ys) / step) * step;
  const y1 = Math.max(Math.ceil(Math.max(...ys) / step) * step, y0 + step);
  const sx = (x) => L + (x - x0) / (x1 - x0) * (W - L - R);
  const sy = (y) => H - B - (y - y0) / (y1 - y0) * (H - T - B);
  svg.appendChild(el("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#999"}));
  svg.appendChild(el("line", {x1: L, y1: T, x2: L, y2: H - B, stroke: "#999"}));
  for (let y = y0; y <= y1 + step / 2; y += step) {
    svg.appendChild(el("text", {x: L - 4, y: sy(y) + 4, "text-anchor": "end", "font-size": 11}, fmt(+y.toPrecision(12))));
  }
  svg.appendChild(el("text", {x: L, y: H - 8, "font-size": 11}, `${hms(x0)}`));
  svg.appendChild(el("text", {x: W - R, y: H - 8, "font-size": 11, "text-anchor": "end"}, `${hms(x1)} since start`));
  svg.appendChild(el("text", {x: 4, y: 14, "font-size": 11}, unit));
  series.forEach((s, i) => {
    // A gauge (`step`) holds its value until the next reading: drawn as steps, not as a ramp between readings.
    const pts = s.step ? s.points.flatMap((p, i) => i ? [[p[0], s.points[i - 1][1]], p] : [p]) : s.points;
    if (pts.length > 1) {
      const d = pts.map((p) => `${sx(p[0]).toFixed(1)},${sy(p[1]).toFixed(1)}`).join(" ");
      svg.appendChild(el("polyline", {points: d, fill: "none", stroke: s.color, "stroke-width": 1.2}));
    } else if (pts.length) {  // one sample so far: a dot, as a line of one point draws nothing
      svg.appendChild(el("circle", {cx: sx(pts[0][0]).toFixed(1), cy: sy(pts[0][1]).toFixed(1), r: 3, fill: s.color}));
    }
    const lx = L + 40 + (i % PER_ROW) * 200, ly = 6 + 14 * Math.floor(i / PER_ROW);
    svg.appendChild(el("rect", {x: lx, y: ly, width: 10, height: 10, fill: s.color}));
    svg.appendChild(el("text", {x: lx + 14, y: ly + 9, "font-size": 11}, `${s.name} (${s.points.length})`));
  });
  byId(id).replaceChildren(svg);
}

setInterval(() => { if (state && !ended) render(); }, 5000); // the elapsed time moves between events
load().catch(showError);
