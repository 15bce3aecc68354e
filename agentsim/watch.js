// The script of `python -m agentsim watch`'s page (agentsim/watch.py serves it as a file: the
// page's Content-Security-Policy allows no inline script). It asks state.json every second and
// draws each experiment: its runs' table, the charts across runs, and a card per run with the
// charts its game declares (agentsim/views.py). Every value from the store is set as text or as
// an attribute's value, never parsed as HTML: the page builds its elements one by one.
"use strict";
(() => {
const EVERY = Math.max(200, Number(new URLSearchParams(location.search).get("every")) || 1000);
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const OTHER = "#8c959f";
const SVGNS = "http://www.w3.org/2000/svg";
let polls = 0;
let lastSeen = "", lastWidth = 0;
let received = 0;  // the client's clock when the last state arrived
let serverTime = 0;  // the server's clock then (seconds since the epoch)
const drawn = [];  // charts waiting to be drawn once their container has a width

// --- elements, built one by one: text is text, attributes are values ---------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  return fill(node, attrs, children);
}
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  return fill(node, attrs, children);
}
function fill(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value == null || value === false) continue;
    if (/^on/i.test(key) || key === "style") throw new Error(`refusing the attribute ${key}`);
    node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child == null || child === false || child === "") continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}
function swatch(colour, hollow) {
  const node = el("i", {class: hollow ? "hollow" : null});
  if (!hollow) node.style.background = colour;
  return node;
}

// --- words and numbers ----------------------------------------------------------------------------
const pct = (value) => value == null ? "–" : `${Math.round(value * 100)}%`;
const num = (value) => value == null || value === "" ? "–" : Number(value).toLocaleString("en-US");
function short(value, percent) {
  if (value == null || !Number.isFinite(Number(value))) return "–";
  if (percent) return `${Math.round(value * 100)}%`;
  const v = Number(value);
  return Math.abs(v) >= 100 || Number.isInteger(v) ? v.toLocaleString("en-US", {maximumFractionDigits: 0}) : v.toFixed(Math.abs(v) >= 10 ? 1 : 2);
}
function duration(seconds) {
  if (seconds == null) return "–";
  if (seconds >= 1) return `${seconds.toFixed(2)} s`;
  if (seconds >= 1e-3) return `${(seconds * 1e3).toFixed(1)} ms`;
  return `${Math.round(seconds * 1e6)} µs`;
}
function clock(seconds) {
  if (seconds == null) return "–";
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor(s % 3600 / 60)).padStart(2, "0")}m`;
}
const epoch = (iso) => iso ? Date.parse(iso) / 1000 : null;
// Now, on the server's clock: the last state's time plus what passed here since it came.
const now = () => serverTime + (performance.now() - received) / 1000;
function localTime(iso) {
  const at = epoch(iso);
  return at == null ? "–" : new Date(at * 1000).toLocaleTimeString();
}
function ageNode(iso, prefix) {
  const node = el("span", {class: "age", "data-at": iso || ""});
  node.textContent = ageText(iso, prefix);
  node.dataset.prefix = prefix;
  return node;
}
function ageText(iso, prefix) {
  const at = epoch(iso);
  return at == null ? `${prefix} unknown time` : `${prefix} ${localTime(iso)} (${clock(now() - at)} ago)`;
}
// How a run ended, in words (a reason the page does not know is shown as recorded).
const ENDINGS = {max_rounds: "reached its last round", months: "reached its last month", collapse: "the resource collapsed",
                 generations: "reached its last generation", consensus: "consensus", flip: "the convention flipped",
                 agreement: "agreement", budget_spent: "its budget was spent"};
const words = (text) => ENDINGS[text] ?? String(text ?? "").replaceAll("_", " ");
const unitOf = (run) => run.unit || "round";

// --- colours: one per name in the game's order, the same in every run ---------------------------
function namePalette(names) {
  const map = new Map();
  (names || []).forEach((name, index) => map.set(String(name), PALETTE[index % PALETTE.length]));
  return (name, index) => map.get(String(name)) || (String(name) === "other names" ? OTHER : PALETTE[(index ?? 0) % PALETTE.length]);
}

// --- charts -----------------------------------------------------------------------------------------
// A chart spec (agentsim/views.py): {title, y_label, series: [{name, points, band, dots}], y_min,
// y_max, percent, names, marks, levels, note}. `pick(x)`: what a click on x opens (a card's
// chart: that round's calls).
function chartBlock(spec, colourOf, options) {
  const box = el("div", {class: "chart", "data-key": spec.key, "data-series": spec.series.length, "data-y-min": spec.y_min ?? "",
                         "data-y-max": spec.y_max ?? "", "data-marks": JSON.stringify((spec.marks || []).map((mark) => mark.at)),
                         "data-points": spec.series.reduce((n, s) => n + s.points.length, 0)});
  const holder = el("div", {class: "plot"});
  const hint = el("div", {class: "hint"}, options.pick ? `click a ${options.unit} for its prompts and replies` : "");
  const legend = el("div", {class: "legend"});
  spec.series.forEach((series, index) => {
    if (spec.series.length > 1 || series.band.length) legend.append(el("span", {"data-series": series.name, "data-colour": series.reference ? OTHER : colourOf(series.name, index)}, swatch(series.reference ? OTHER : colourOf(series.name, index)), series.name + (series.reference ? " (dashed)" : "")));
  });
  if (spec.series.some((series) => series.band.length)) legend.append(el("span", {class: "note"}, "shaded: the band"));
  box.append(el("div", {class: "title"}, spec.title), holder, legend);
  if (spec.note) box.append(el("div", {class: "note"}, spec.note));
  box.append(hint);
  drawn.push(() => drawChart(holder, hint, spec, colourOf, options));
  return box;
}

function drawChart(holder, hint, spec, colourOf, options) {
  const width = Math.max(240, Math.floor(holder.clientWidth || 320));
  const narrow = width < 420;
  const height = narrow ? 170 : 190;
  const left = 44, right = 10, top = 8, bottom = 30;
  const plotW = width - left - right, plotH = height - top - bottom;
  const xs = [], ys = [];
  for (const series of spec.series) {
    for (const [x, y] of series.points) { xs.push(x); ys.push(y); }
    for (const [x, lo, hi] of series.band) { xs.push(x); ys.push(lo, hi); }
    for (const [x, y] of series.dots) { xs.push(x); ys.push(y); }
  }
  for (const mark of spec.marks || []) xs.push(mark.at);
  for (const level of spec.levels || []) if (spec.y_max == null || level.at <= spec.y_max) ys.push(level.at);
  const root = svg("svg", {width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": spec.title,
                           "data-left": left, "data-right": width - right});
  if (!xs.length) {
    root.append(svg("text", {x: width / 2, y: height / 2, "text-anchor": "middle"}, "nothing recorded yet"));
    holder.replaceChildren(root);
    return;
  }
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  let y0 = spec.y_min ?? Math.min(...ys), y1 = spec.y_max ?? Math.max(...ys);
  if (spec.y_min == null && y0 > 0 && y0 < (y1 - y0)) y0 = 0;
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  root.dataset.xmin = x0; root.dataset.xmax = x1;
  const X = (v) => left + (v - x0) / (x1 - x0) * plotW;
  const Y = (v) => top + plotH * (1 - (Math.min(Math.max(v, y0), y1) - y0) / (y1 - y0));
  const f = (v) => v.toFixed(1);
  const grid = svg("g");
  for (const v of ticks(y0, y1, narrow ? 3 : 4)) {
    grid.append(svg("line", {class: "grid", x1: left, x2: left + plotW, y1: f(Y(v)), y2: f(Y(v))}),
                svg("text", {x: left - 4, y: f(Y(v) + 3.5), "text-anchor": "end"}, short(v, spec.percent)));
  }
  for (const v of ticks(x0, x1, narrow ? 4 : 6, true)) {
    grid.append(svg("text", {x: f(X(v)), y: height - 16, "text-anchor": "middle"}, short(v)));
  }
  grid.append(svg("line", {class: "axis", x1: left, x2: left + plotW, y1: top + plotH, y2: top + plotH}));
  grid.append(svg("text", {x: left + plotW, y: height - 3, "text-anchor": "end"}, options.unit));
  root.append(grid);
  for (const level of spec.levels || []) {
    if (level.at < y0 || level.at > y1) continue;
    root.append(svg("line", {class: "level", x1: left, x2: left + plotW, y1: f(Y(level.at)), y2: f(Y(level.at))},
                    svg("title", {}, level.label)),
                svg("text", {x: left + plotW - 2, y: f(Y(level.at) > top + 12 ? Y(level.at) - 3 : Y(level.at) + 11), "text-anchor": "end", class: "level-label"}, level.label));
  }
  spec.series.forEach((series, index) => {
    const colour = colourOf(series.name, index);
    if (series.band.length > 1) {
      const upper = series.band.map(([x, , hi]) => `${f(X(x))},${f(Y(hi))}`);
      const lower = series.band.slice().reverse().map(([x, lo]) => `${f(X(x))},${f(Y(lo))}`);
      const band = svg("polygon", {points: upper.concat(lower).join(" "), fill: colour, "fill-opacity": 0.16, stroke: "none"});
      root.append(band);
    }
    if (series.dots.length) {
      const dots = svg("g", {fill: colour, "fill-opacity": 0.45});
      for (const [x, y] of series.dots) dots.append(svg("circle", {cx: f(X(x)), cy: f(Y(y)), r: 2}));
      root.append(dots);
    }
    const stroke = series.reference ? OTHER : colour;
    if (series.points.length > 1) {
      root.append(svg("polyline", {class: "line", fill: "none", stroke, "stroke-width": series.reference ? 1.2 : 1.8,
                                   "stroke-dasharray": series.reference ? "5 3" : null,
                                   "data-series": series.name, "data-points": series.points.length,
                                   "data-values": JSON.stringify(series.points),
                                   points: series.points.map(([x, y]) => `${f(X(x))},${f(Y(y))}`).join(" ")}));
      if (series.points.length <= 24 && !series.dots.length && !series.reference) {  // few points: each one marked
        const marks = svg("g", {fill: colour});
        for (const [x, y] of series.points) marks.append(svg("circle", {cx: f(X(x)), cy: f(Y(y)), r: 2.6}));
        root.append(marks);
      }
    } else if (series.points.length === 1) {
      const [x, y] = series.points[0];
      root.append(svg("circle", {class: "line", cx: f(X(x)), cy: f(Y(y)), r: 3, fill: colour, "data-series": series.name, "data-points": 1,
                                 "data-values": JSON.stringify(series.points)}));
    }
  });
  for (const mark of spec.marks || []) {
    root.append(svg("line", {class: "mark", x1: f(X(mark.at)), x2: f(X(mark.at)), y1: top, y2: top + plotH}),
                svg("text", {x: f(Math.min(X(mark.at) + 3, left + plotW - 2)), y: top + 10, "text-anchor": X(mark.at) > left + plotW * 0.7 ? "end" : "start", class: "mark-label"}, mark.label));
  }
  // Hover: the values at the nearest x; click: that point's calls.
  const at = [...new Set(spec.series.flatMap((series) => series.points.map(([x]) => x).concat(series.dots.map(([x]) => x))))].sort((a, b) => a - b);
  const cursor = svg("line", {class: "cursor", x1: 0, x2: 0, y1: top, y2: top + plotH, visibility: "hidden"});
  const hit = svg("rect", {class: "hit", x: left, y: top, width: plotW, height: plotH});
  root.append(cursor, hit);
  const nearest = (event) => {
    const box = root.getBoundingClientRect();
    const px = (event.clientX - box.left) * width / box.width;
    const wanted = x0 + (px - left) / plotW * (x1 - x0);
    let best = at[0];
    for (const x of at) if (Math.abs(x - wanted) < Math.abs(best - wanted)) best = x;
    return best;
  };
  hit.addEventListener("mousemove", (event) => {
    const x = nearest(event);
    if (x == null) return;
    cursor.setAttribute("x1", f(X(x))); cursor.setAttribute("x2", f(X(x))); cursor.setAttribute("visibility", "visible");
    const values = spec.series.map((series) => {
      const point = series.points.find(([px]) => px === x);
      return point ? `${series.name} ${short(point[1], spec.percent)}` : null;
    }).filter(Boolean);
    hint.textContent = `${options.unit} ${short(x)}: ${values.join(", ") || "no value"}` + (options.pick ? " (click for its calls)" : "");
  });
  hit.addEventListener("mouseleave", () => cursor.setAttribute("visibility", "hidden"));
  if (options.pick && at.length) {
    root.classList.add("pickable");
    hit.addEventListener("click", (event) => options.pick(nearest(event)));
  }
  holder.replaceChildren(root);
}

function ticks(lo, hi, count, whole) {
  const span = hi - lo;
  let step = Math.pow(10, Math.floor(Math.log10(span / count)));
  for (const factor of [1, 2, 2.5, 5, 10]) if (span / (step * factor) <= count) { step *= factor; break; }
  if (whole) step = Math.max(1, Math.round(step));
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toFixed(10)));
  return out;
}

// --- the network of a run ------------------------------------------------------------------------
function graphBlock(graph, colourOf) {
  const size = 320, pad = 10;
  const xs = graph.nodes.map((n) => n[1]), ys = graph.nodes.map((n) => n[2]);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const sx = (v) => pad + (x1 > x0 ? (v - x0) / (x1 - x0) : 0.5) * (size - 2 * pad);
  const sy = (v) => pad + (y1 > y0 ? (v - y0) / (y1 - y0) : 0.5) * (size - 2 * pad);
  const at = new Map(graph.nodes.map((n) => [n[0], [sx(n[1]), sy(n[2])]]));
  const radius = graph.nodes.length > 200 ? 2.5 : graph.nodes.length > 60 ? 4 : 6;
  const root = svg("svg", {class: "graph", width: size, height: size, viewBox: `0 0 ${size} ${size}`, role: "img",
                           "aria-label": "interaction graph, agents coloured by their latest choice",
                           "data-coloured": graph.nodes.filter((n) => n[3] != null).length, "data-nodes": graph.nodes.length});
  const edges = svg("g", {stroke: "#d0d7de", "stroke-width": 0.7});
  for (const [a, b] of graph.edges) {
    if (!at.has(a) || !at.has(b)) continue;
    edges.append(svg("line", {x1: at.get(a)[0].toFixed(1), y1: at.get(a)[1].toFixed(1), x2: at.get(b)[0].toFixed(1), y2: at.get(b)[1].toFixed(1)}));
  }
  root.append(edges);
  for (const n of graph.nodes) {
    root.append(svg("circle", {cx: at.get(n[0])[0].toFixed(1), cy: at.get(n[0])[1].toFixed(1), r: radius,
                               fill: n[3] == null ? "#ffffff" : colourOf(n[3], 0), stroke: "#57606a", "stroke-width": 0.8},
                    svg("title", {}, `agent ${n[0]}: ${n[3] ?? "no choice yet"}`)));
  }
  const used = [...new Set(graph.nodes.map((n) => n[3]).filter((c) => c != null))];
  const legend = el("div", {class: "legend"}, used.map((name) => el("span", {}, swatch(colourOf(name, 0)), name)),
                    graph.nodes.some((n) => n[3] == null) ? el("span", {}, swatch("", true), "no choice yet") : null);
  const sample = graph.of > graph.nodes.length ? ` (a connected sample of ${num(graph.nodes.length)} of its ${num(graph.of)} agents)` : "";
  root.style.maxWidth = `${size}px`;
  return el("div", {class: "row"}, el("span", {class: "label"}, "network"),
            el("div", {}, root, legend, el("div", {class: "note"}, `each agent coloured by its latest choice (fallbacks left out)${sample}`)));
}

// --- a run's card ---------------------------------------------------------------------------------
function statusClass(status) { return `status-${String(status).replaceAll(" ", "-")}`; }

function progressText(run) {
  const unit = unitOf(run);
  const done = run.total != null ? Math.floor(run.done) : run.rounds;
  const total = run.total ?? run.max_rounds;
  return total ? `${num(done)} of ${num(total)} ${unit}s played` : `${num(done)} ${unit}s played`;
}

function progressRow(run) {
  const total = run.total ?? run.max_rounds;
  const done = run.total != null ? run.done : run.rounds;
  // A run that ended by its own rule (consensus, a collapse) is over: a full bar, not a share of its limit.
  const filled = run.status === "done" ? 100 : total ? Math.min(100, (done || 0) / total * 100) : 0;
  const inner = el("i");
  inner.style.width = `${filled.toFixed(1)}%`;
  const bar = el("div", {class: `bar progress-${String(run.status).replaceAll(" ", "-")}`, "data-filled": filled.toFixed(1)}, inner);
  const limit = run.status === "done" && total && done < total ? ` (ended before its limit of ${short(total)})` : "";
  const text = run.state ? `${run.state}` : progressText(run);
  return el("div", {class: "row"}, el("span", {class: "label"}, "progress"),
            el("div", {}, bar, el("span", {class: "note progress-text"},
                                  `${text}${limit} · ${num(run.interactions)} interactions · ${clock(run.elapsed_s)}${run.status === "running" ? " so far" : ""}`)));
}

function sharesBlock(figures, colourOf) {
  const all = Object.entries(figures.shares || {}).sort((a, b) => b[1] - a[1]);
  if (!all.length) return null;
  const ranked = all.length <= 4 ? all : all.some(([, share]) => share > 0) ? all.filter(([, share]) => share > 0) : all.slice(0, 3);
  const unchosen = all.length - ranked.length;
  const rows = ranked.slice(0, 8).map(([name, share], index) => {
    const inner = el("i");
    inner.style.width = `${(share * 100).toFixed(1)}%`;
    inner.style.background = colourOf(name, index);
    return el("div", {class: "share", "data-name": name, "data-share": share},
              el("span", {class: "name", title: name}, name), el("span", {class: "bar"}, inner), el("span", {class: "pct"}, pct(share)));
  });
  const note = [figures.shares_note, unchosen ? `${unchosen} other name${unchosen === 1 ? "" : "s"} at 0%` : ""].filter(Boolean).join("; ");
  return [el("div", {class: "row"}, el("span", {class: "label"}, figures.shares_label || "names"), el("div", {class: "shares"}, rows)),
          note ? el("div", {class: "row"}, el("span"), el("span", {class: "note"}, note)) : null];
}

function callsBlock(run) {
  const usage = run.usage;
  if (!usage) return null;
  const tokens = (usage.prompt_tokens || 0) + (usage.completion_tokens || 0);
  const rate = run.calls_per_second == null ? "" : ` (${run.calls_per_second.toFixed(1)}/s${run.status === "running" ? "" : " over the run"})`;
  const errors = Object.entries(usage.errors || {}).map(([kind, count]) => `${kind} ${count}`).join(", ");
  return [
    el("div", {class: "row"}, el("span", {class: "label"}, "calls"),
       el("span", {class: "calls"}, `${num(usage.calls)}${rate}${usage.prompt_tokens != null ? `, tokens ${num(tokens)}` : ""}`)),
    usage.latency_p50_s != null ? el("div", {class: "row"}, el("span", {class: "label"}, "latency"),
                                     el("span", {}, `p50 ${duration(usage.latency_p50_s)}, p95 ${duration(usage.latency_p95_s)}`)) : null,
    el("div", {class: "row"}, el("span", {class: "label"}, "replies"),
       el("span", {class: "replies"}, `${num(usage.invalid_replies)} invalid, ${num(usage.reasks)} re-asks, `, el("b", {}, `${num(usage.fallbacks)} fallbacks`))),
    el("div", {class: "row"}, el("span", {class: "label"}, "backend"),
       el("span", {}, `$${Number(usage.cost_usd || 0).toFixed(4)}, ${num(usage.cache_hits || 0)} cache hits, ${num(usage.retries || 0)} retries${errors ? `, errors: ${errors}` : ""}`)),
  ];
}

function card(run, experiment, colourOf) {
  if (run.damaged) {
    return el("article", {class: "run damaged", "data-run": run.run, "data-status": "damaged"},
              el("h3", {}, `run ${run.run} — `, el("span", {class: "status-damaged"}, "damaged")),
              el("p", {class: "error"}, run.damaged));
  }
  const figures = run.figures || {};
  const views = run.views;
  const notRunning = run.status === "not running";
  const cell = [run.group, run.cell && run.cell !== run.group ? run.cell : ""].filter(Boolean).join(" · ");
  const node = el("article", {class: `run${notRunning ? " not-running" : ""}`, "data-run": run.run, "data-status": run.status,
                              "data-round": run.rounds ?? 0, "data-calls": run.usage?.calls ?? "", "data-success": figures.success_rate ?? "",
                              "data-done": run.done ?? "", "data-total": run.total ?? "", "data-unit": unitOf(run),
                              "data-group": run.group || "", "data-elapsed": run.elapsed_s ?? "", "data-as-of": run.as_of || "",
                              "data-lines": JSON.stringify(figures.lines || [])},
    el("h3", {}, `run ${run.run} (seed ${run.seed}${cell ? `, ${cell}` : ""}) — `, el("span", {class: statusClass(run.status)}, run.status)),
    ageNode(run.as_of, notRunning ? "figures from its last record, as of" : run.status === "running" ? "figures as of" : "final figures, as of"));
  if (run.figures_stale) node.append(el("span", {class: "age"}, " · the run has moved on: these figures are being brought up to date"));
  if (notRunning) {
    node.append(el("div", {class: "notice bad"}, el("b", {}, "not running: "),
                   `no agentsim is recording it (killed, or its machine stopped). Its last record: ${localTime(run.last_record)}. Continue it with `,
                   el("code", {class: "command"}, run.resume)));
  }
  node.append(progressRow(run));
  if (run.stop_reason && run.status !== "running" && !notRunning && !run.state) {
    node.append(el("div", {class: "row"}, el("span", {class: "label"}, "ended"), el("span", {class: "stop"}, words(run.stop_reason))));
  }
  if (run.note) node.append(el("p", {class: "note"}, run.note));
  if (run.error) node.append(el("p", {class: "error"}, run.error));
  else if (!run.figures) node.append(el("p", {class: "empty"}, run.usage ? "figures need the scenario's class (see above)" : "no checkpoint yet: figures after the run's first commit"));
  if (views?.stats?.length) {
    node.append(el("div", {class: "stats"}, views.stats.map((stat) => el("div", {class: "stat", "data-label": stat.label, "data-value": stat.value ?? ""},
                                                                            el("span", {class: "k"}, stat.label), el("span", {class: "v"}, stat.text)))));
  }
  if (figures.success_rate != null && !views) {
    node.append(el("div", {class: "row"}, el("span", {class: "label"}, "success"), el("span", {class: "big success"}, pct(figures.success_rate))));
  }
  node.append(...(sharesBlock(figures, colourOf) || []).filter(Boolean));
  for (const [label, text] of figures.lines || []) node.append(el("div", {class: "row line"}, el("span", {class: "label"}, label), el("span", {}, text)));
  if (views?.charts?.length) {
    const unit = views.unit || "round";
    const pick = (x) => openCalls(experiment.where, run.run, x, unit);
    node.append(el("div", {class: "charts"}, views.charts.map((spec) => chartBlock(spec, spec.names ? colourOf : namePalette([]), {unit, pick}))));
  }
  if (run.graph) node.append(graphBlock(run.graph, colourOf));
  for (const block of views?.texts || []) {
    node.append(el("div", {class: "texts"}, el("h4", {}, block.title),
                   el("dl", {}, block.rows.map(([label, text]) => [el("dt", {}, label), el("dd", {}, text)]))));
  }
  const calls = callsBlock(run);
  if (calls) node.append(...calls.filter(Boolean));
  return node;
}

// --- an experiment --------------------------------------------------------------------------------
function runsTable(runs) {
  const cells = runs.some((r) => r.cell || r.group);
  const fixed = new Set(["calls", "fallbacks"]);  // columns of their own
  const statLabels = [...new Set(runs.flatMap((r) => (r.stats || []).map(([label]) => label)))].filter((label) => !fixed.has(label)).slice(0, 4);
  const head = el("tr", {}, el("th", {}, "run"), el("th", {}, "seed"), cells ? el("th", {}, "cell") : null, el("th", {}, "status"),
                  el("th", {}, "progress"), statLabels.map((label) => el("th", {}, label)), el("th", {}, "calls"),
                  el("th", {}, "fallbacks"), el("th", {}, "ended"), el("th", {}, "figures as of"));
  const rows = runs.map((run) => {
    if (run.damaged) return el("tr", {"data-run": run.run}, el("td", {class: "num"}, run.run), el("td", {colspan: 9 + statLabels.length, class: "error"}, run.damaged));
    const stats = Object.fromEntries(run.stats || []);
    return el("tr", {"data-run": run.run, "data-status": run.status},
              el("td", {class: "num"}, run.run), el("td", {class: "num"}, run.seed),
              cells ? el("td", {}, [run.group, run.cell !== run.group ? run.cell : ""].filter(Boolean).join(" · ")) : null,
              el("td", {class: statusClass(run.status)}, run.status), el("td", {}, run.state || progressText(run)),
              statLabels.map((label) => el("td", {}, stats[label] ?? "–")),
              el("td", {class: "num"}, num(run.usage?.calls)), el("td", {class: "num"}, num(run.usage?.fallbacks)),
              el("td", {}, run.status === "running" || run.status === "not running" ? "–" : words(run.stop_reason || "")),
              el("td", {}, localTime(run.as_of)));
  });
  return el("div", {class: "scroll"}, el("table", {class: "runs"}, head, rows));
}

function comparisonTable(comparison) {
  const head = el("tr", {}, el("th", {}, "group"), el("th", {}, "runs"), comparison.labels.map((label) => el("th", {}, label)));
  const rows = comparison.rows.map((row) => el("tr", {"data-group": row.group}, el("td", {}, row.group), el("td", {class: "num"}, row.runs),
                                                 comparison.labels.map((label) => el("td", {class: "num"}, row.cells[label]))));
  return el("div", {class: "scroll"}, el("table", {class: "compare"}, head, rows));
}

function experimentBlock(experiment) {
  const title = el("h2", {}, experiment.scenario || experiment.where, experiment.where !== "." && experiment.scenario ? el("span", {class: "note"}, ` ${experiment.where}`) : null);
  const section = el("section", {class: "experiment", "data-where": experiment.where, "data-recording": String(experiment.recording)}, title);
  if (experiment.error) return fill(section, {}, [el("p", {class: "error"}, `could not read it this time (${experiment.error}); trying again`)]);
  if (experiment.damaged && !(experiment.runs || []).length) return fill(section, {"data-damaged": "true"}, [el("p", {class: "notice bad"}, experiment.damaged)]);
  if (experiment.waiting) return fill(section, {}, [el("p", {class: "empty"}, "the experiment is starting…")]);
  const runs = experiment.runs || [];
  const counts = {};
  for (const run of runs) counts[run.status] = (counts[run.status] || 0) + 1;
  const waiting = Math.max(0, (experiment.planned || 0) - runs.length);
  if (waiting) counts["not begun"] = waiting;
  const sum = (key) => runs.reduce((total, run) => total + Number(run.usage?.[key] || 0), 0);
  const standIn = experiment.stand_in === true;  // the providers' table says (watch.py)
  const recording = experiment.recording === true ? "recording" : experiment.recording === false ? "not recording" : "";
  const colourOf = namePalette(experiment.names);
  section.append(el("div", {class: "meta"}, "backend ", el("b", {class: standIn ? "standin" : null}, experiment.backend ?? "–"),
                    standIn ? el("span", {class: "standin"}, " (built-in stand-in rules, not an LLM)") : null,
                    ` · seed ${experiment.seed ?? "–"} · ${experiment.planned} run${experiment.planned === 1 ? "" : "s"} · `
                    + `record ${experiment.record ?? "moves"} · `,
                    recording ? el("b", {class: experiment.recording ? "status-running" : "status-not-running"}, recording) : null,
                    recording ? " · " : null, `${num(sum("calls"))} calls, ${num(sum("fallbacks"))} fallbacks, $${sum("cost_usd").toFixed(4)}`));
  if (experiment.damaged) section.append(el("p", {class: "notice bad"}, experiment.damaged));
  if (experiment.unresolved) section.append(el("p", {class: "notice warn"}, experiment.unresolved));
  if (experiment.loaded_from) section.append(el("p", {class: "note"}, `scenario class loaded from the file the runs recorded: ${experiment.loaded_from}`));
  section.append(el("div", {class: "chips"}, Object.entries(counts).map(([status, count]) => el("span", {class: statusClass(status), "data-status": status}, `${count} ${status}`))));
  const idle = runs.filter((run) => run.status === "not running");
  if (idle.length && runs.length > 1) {  // (a single run's card says it)
    section.append(el("div", {class: "notice bad", "data-not-running": idle.length}, el("b", {}, `${idle.length} run${idle.length === 1 ? " is" : "s are"} not running`),
                      `: no agentsim records into this directory (killed, or stopped). Their figures are their last record's (${localTime(idle[0].last_record)}); nothing is growing. Continue with `,
                      el("code", {class: "command"}, experiment.resume)));
  }
  if (runs.length > 1) section.append(el("h4", {}, "runs"), runsTable(runs));
  if ((experiment.combined || []).length) {
    const ages = runs.map((run) => epoch(run.as_of)).filter((at) => at != null);
    const oldest = ages.length ? new Date(Math.min(...ages) * 1000).toISOString() : null;
    section.append(el("h4", {}, "across runs"), ageNode(oldest, "from each run's latest figures; the oldest as of"),
                   el("div", {class: "charts across"}, experiment.combined.map((spec) => chartBlock(
                     spec, spec.names ? colourOf : namePalette((spec.series || []).map((s) => s.name)), {unit: experiment.unit || "round"}))));
  }
  if (experiment.comparison) section.append(el("h4", {}, "compared by group"), comparisonTable(experiment.comparison));
  const shown = runs.filter((run) => (experiment.cards || []).includes(run.run));
  if (runs.length) {
    section.append(el("div", {class: "cards"}, shown.map((run) => card(run, experiment, colourOf))));
    if (runs.length > shown.length) section.append(el("p", {class: "note"}, `${runs.length - shown.length} more runs in the table above`));
  } else {
    section.append(el("p", {class: "empty"}, "no run has begun yet"));
  }
  return section;
}

function render(state) {
  document.getElementById("where").textContent = state.directory;
  const main = document.getElementById("experiments");
  drawn.length = 0;
  const blocks = state.experiments.length ? state.experiments.map(experimentBlock)
    : [el("p", {class: "empty"}, state.exists === false
      ? `${state.directory} does not exist yet; this page waits for it and shows the experiment when a run begins recording there`
      : "no experiment recorded here yet; this page follows the directory and shows one when it begins")];
  main.replaceChildren(...blocks);
  for (const draw of drawn.splice(0)) draw();
  const updated = document.getElementById("updated");
  updated.textContent = `updated ${new Date().toLocaleTimeString()}`;
  updated.classList.remove("stale");
}

// --- the prompts and replies of a round (a month, a generation) ------------------------------------
async function openCalls(where, run, x, unit) {
  const panel = document.getElementById("drill");
  const list = document.getElementById("drill-calls");
  document.getElementById("drill-title").textContent = `run ${run}, ${unit} ${short(x)}`;
  document.getElementById("drill-note").textContent = "reading the calls…";
  list.replaceChildren();
  panel.hidden = false;
  panel.dataset.run = run; panel.dataset.x = x; panel.dataset.loaded = "false";
  try {
    const response = await fetch(`calls.json?where=${encodeURIComponent(where)}&run=${encodeURIComponent(run)}&x=${encodeURIComponent(x)}`, {cache: "no-store"});
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error || `HTTP ${response.status}`);
    panel.dataset.rounds = answer.rounds.join(",");
    const same = answer.rounds[0] === answer.rounds[1];
    const rounds = (same ? `round ${answer.rounds[0]}` : `rounds ${answer.rounds[0]} to ${answer.rounds[1]}`)
      + (same && answer.rounds[0] === Number(x) ? "" : " (as the store and transcript number them)");
    document.getElementById("drill-note").replaceChildren(
      `${answer.calls.length + answer.more} call${answer.calls.length + answer.more === 1 ? "" : "s"} in ${rounds}, as `,
      el("code", {}, "transcript"), " prints them", answer.more ? `; the first ${answer.calls.length} shown, all with ` : "; the same with ",
      el("code", {class: "command"}, answer.command));
    list.replaceChildren(...answer.calls.map((call) => el("div", {class: `call${call.fallback ? " fallback" : ""}`, "data-attempt": call.attempt,
                                                               "data-fallback": String(call.fallback), "data-reask": String(call.reask)},
      el("div", {class: "tags"}, `agent ${call.agent}, attempt ${call.attempt}`, call.reask ? el("b", {class: "reask"}, "re-ask") : null,
         call.invalid ? el("b", {class: "invalid"}, "unusable reply") : null, call.fallback ? el("b", {class: "fallback"}, "fallback") : null),
      el("pre", {}, call.text.replace(/^\n/, "")))));
    if (!answer.calls.length) list.append(el("p", {class: "empty"}, `no call was recorded in this ${unit} (rule agents ask none)`));
    panel.dataset.loaded = "true";
  } catch (error) {
    document.getElementById("drill-note").textContent = `could not read the calls: ${error.message}`;
    panel.dataset.loaded = "error";
  }
}

// --- following the directory ----------------------------------------------------------------------
async function poll() {
  try {
    const response = await fetch("state.json", {cache: "no-store"});
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const state = await response.json();
    received = performance.now();
    serverTime = epoch(state.time) ?? Date.now() / 1000;
    // Drawn again only when something changed (a chart under the pointer keeps its cursor);
    // the ages grow on their own.
    const seen = JSON.stringify([state.directory, state.exists, state.experiments]);
    if (seen !== lastSeen || innerWidth !== lastWidth) render(state);
    else document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
    lastSeen = seen; lastWidth = innerWidth;
    document.body.dataset.polls = String(++polls);
  } catch (error) {
    lastSeen = "";
    const updated = document.getElementById("updated");
    updated.textContent = `watch is not answering (${error.message}); the figures below are as old as they say; retrying`;
    updated.classList.add("stale");
  }
  setTimeout(poll, EVERY);
}

// Every age on the page grows between readings (a reading that fails leaves them growing).
setInterval(() => {
  if (!received) return;
  for (const node of document.querySelectorAll(".age[data-at]")) {
    if (node.dataset.prefix) node.textContent = ageText(node.dataset.at, node.dataset.prefix);
  }
}, 1000);

document.getElementById("drill-close").addEventListener("click", () => { document.getElementById("drill").hidden = true; });
document.addEventListener("keydown", (event) => { if (event.key === "Escape") document.getElementById("drill").hidden = true; });
window.agentsimWatch = {openCalls};
poll();
})();
