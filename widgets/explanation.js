// rudi-explain widget: live progress, summary, rule cards, thresholds, per-user drill-down.
//
// A plain ES module for anywidget (no build step, no CDN). It touches the
// model only through get / on / off / send, so the standalone report can
// drive it with a small local shim. Every string from the data goes into the
// page with textContent or an attribute value, never innerHTML.

const SVGNS = "http://www.w3.org/2000/svg";
const STAGES = ["teacher", "search", "literals", "student", "evaluate"];
// Rough share of a run each stage takes, for one overall bar.
const STAGE_WEIGHT = { teacher: 0.05, search: 0.6, literals: 0.05, student: 0.25, evaluate: 0.05 };
const STAGE_LABEL = { teacher: "teacher scores", search: "statistics search", literals: "literals",
  student: "rule student", evaluate: "held-out figures" };
// Seconds per stage are listed in the order the stages run, whatever order the object has (a saved
// notebook's widget state is written with its keys sorted).
const SECONDS_ORDER = ["teacher", "search", "literals", "student", "pruning", "evaluate"];
// Feed markers take their fill from the CSS (--rx-feed-0 .. 9, light and dark values there).
const FEED_PALETTE = 10;

// ------------------------------------------------------------------ DOM helpers
function h(tag, props, ...children) {
  const node = document.createElement(tag);
  setProps(node, props);
  append(node, children);
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) node.setAttribute(k, String(v));
  append(node, children);
  return node;
}

// A chart's <svg>: drawn W x H at its natural size, never scaled down (a 460 px chart in a 270 px
// view would show its 10 px text at 6 px); chartBox puts it in a box that scrolls sideways instead.
function chartSvg(cls, W, H, label) {
  return svg("svg", { class: `rx-svg ${cls}`, viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img",
    "aria-label": label, style: `width:${W}px;height:${H}px` });
}

const chartBox = (box) => scrollBox(`chart-${box.getAttribute("aria-label")}`, box, "rx-chart-scroll");

// A table in a box that scrolls sideways: the one place a narrow view may be wider inside.
function scrollBox(key, table, cls = "") {
  return h("div", { class: `rx-scroll ${cls}`.trim(), data: { scrollKey: key } }, table);
}

function setProps(node, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "data") for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = String(dv);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === "style") node.setAttribute("style", v);
    else if (k === "value") node.value = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));  // text, never HTML
  }
}

// A key the widget handles itself: not a page scroll (Space), not a notebook shortcut.
// JupyterLab reads shortcuts as keydown bubbles up to the document, so stopping it here is enough.
function swallow(e) {
  e.preventDefault();
  e.stopPropagation();
}

function fmt(x, digits = 4) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x)) return x.toLocaleString("en-US");
  const a = Math.abs(x);
  if (a >= 1e4) return x.toLocaleString("en-US", { maximumFractionDigits: 0 });
  // no exponent for ordinary magnitudes ("0.000886", not "8.86e-4" beside "0.001"): String() writes one only below 1e-6
  if (a >= 1e-6 || a === 0) return String(Number(x.toPrecision(digits)));
  return x.toExponential(2);
}

// Weights and points (rule weights, the intercept, rule scores, effect steps, attributions), one style
// everywhere, as the static copy writes them (static_view.points_text): 3 significant digits, at most
// 3 decimals unless that would show 0 (then one significant digit: 0.0004), no exponent from 1e-6 to
// 1e15 (1,230,000, not every digit), the ASCII minus (what the text forms print and what a reader copies
// into Python).
function points(x, sign = false) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (x === 0) return "0";
  const a = Math.abs(x), e = Math.floor(Math.log10(a));
  const head = x < 0 ? "-" : sign ? "+" : "";
  if (a < 1e-6) return head + a.toExponential(0);
  if (e >= 3) {
    // a half up on the float's exact value (toPrecision), as static_view.points_text rounds
    const digits = a.toExponential(2);  // "1.23e+6"
    if (Number(digits.split("e")[1]) >= 15) return head + digits;
    return head + Number(a.toPrecision(3)).toLocaleString("en-US", { maximumFractionDigits: 0 });
  }
  let d = Math.max(0, Math.min(3, 2 - e));
  if (Number(a.toFixed(d)) === 0) d = -e;
  return head + a.toLocaleString("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
}

// a statistic's words with its unit, when its column has one: "total amount (EUR)"
const withUnit = (s) => (s.unit ? `${s.words} (${s.unit})` : s.words);
const pct = (x, d = 1) => (x === null || x === undefined ? "–" : `${(100 * x).toFixed(d)}%`);
const signed = (x) => points(x, true);
// A bin edge of a histogram as the payload writes it (a share as a percent, with the unit); an older
// saved payload has no texts and keeps its numbers.
const edgeText = (t, i) => (t.edges_text && t.edges_text[i] !== undefined ? t.edges_text[i] : fmt(t.edges[i]));

// ------------------------------------------------------------------ terms explained
// Hover help for the words a reader meets first. A term is focusable (Tab) and shows the same text
// beside it on focus (the CSS reads data-tip), so the help reaches keyboard users too, not only the mouse.
const TERMS = {
  fidelity: "Fidelity: of all pairs of users, the share the rules order as the model does " +
    "(the higher-scored of the two by the model also gets the higher rule score). 1 is perfect, 0.5 is chance.",
  literal: "Literal: one condition on one statistic of a user's events, a value above (or at most) a threshold. " +
    "Rules join literals with and / or.",
  "held out": "Held out: users kept out of the search and of fitting the rules (the test split). " +
    "Figures on them say how well the rules carry over to users they were not built on.",
  reward: "Reward: how well a candidate statistic separates users with high model scores from those with low ones, " +
    "during the search; the search keeps the statistics with the best reward.",
};

// A focused term's tip (CSS ::after) stays inside the widget: no wider than it, and shifted left when
// the term sits near its right edge (a 640 px window leaves the widget 270 to 560 px).
function placeTip(e) {
  const t = e.currentTarget, root = t.closest(".rx-root");
  if (!root) return;
  const r = root.getBoundingClientRect(), b = t.getBoundingClientRect();
  const width = Math.max(120, Math.min(300, r.width - 16));
  t.style.setProperty("--rx-tip-width", `${width}px`);
  t.style.setProperty("--rx-tip-left", `${Math.min(0, r.right - 8 - width - b.left)}px`);
}

function term(text, key) {
  const tip = TERMS[key || text];
  return h("span", { class: "rx-term", title: tip, tabindex: "0", data: { tip, term: key || text }, on: { focus: placeTip } }, text);
}

// ------------------------------------------------------------------ export: downloads made in the page
// A Blob and a temporary <a download>: no server, works in JupyterLab, Notebook 7 and the file:// report.
function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href: url, download: name, style: "display:none" });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// A CSV cell: quoted when it holds a comma, quote or line break; text that a spreadsheet would run as a
// formula (= + - @ at the start) gets a leading apostrophe (CSV injection). Numbers stay numbers.
function csvCell(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "number") return String(v);
  let t = String(v);
  if (/^[=+\-@\t\r]/.test(t)) t = `'${t}`;
  return /[",\r\n]/.test(t) ? `"${t.replace(/"/g, '""')}"` : t;
}

const RULE_COLUMNS = ["rule", "weight", "direction", "text", "coverage", "n_fires", "mean_fires", "mean_not", "score_gap", "statistics"];

function rulesCsv(rules) {
  const rows = rules.map((c) => [c.index + 1, c.weight, c.direction, c.text, c.coverage, c.n_fires, c.mean_fires, c.mean_not,
    scoreGap(c), [...new Set((c.literals || []).map((l) => l.words))].join("; ")]);
  return [RULE_COLUMNS, ...rows].map((r) => r.map(csvCell).join(",")).join("\r\n") + "\r\n";
}

// The score gap of a rule: mean teacher score where it fires minus where it does not.
const scoreGap = (c) => (c.mean_fires === null || c.mean_not === null ? null : Number((c.mean_fires - c.mean_not).toPrecision(6)));

// A chart as a file of its own: the page's CSS does not travel with it, so the styles that draw it
// (fills, strokes, text) are written onto each element from what the page computed.
const SVG_STYLE = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity", "opacity",
  "font-size", "font-family", "font-weight", "visibility"];
function svgFile(node) {
  const copy = node.cloneNode(true);
  const from = [node, ...node.querySelectorAll("*")], to = [copy, ...copy.querySelectorAll("*")];
  from.forEach((n, i) => {
    const cs = getComputedStyle(n);
    to[i].setAttribute("style", SVG_STYLE.map((k) => `${k}:${cs.getPropertyValue(k)}`).join(";"));
  });
  copy.setAttribute("xmlns", SVGNS);
  const vb = (node.getAttribute("viewBox") || "0 0 0 0").split(" ");
  const bg = getComputedStyle(node.closest(".rx-root") || node).getPropertyValue("--rx-bg").trim() || "#ffffff";
  copy.insertBefore(svg("rect", { x: vb[0], y: vb[1], width: vb[2], height: vb[3], fill: bg }), copy.firstChild);
  return `<?xml version="1.0" encoding="UTF-8"?>\n${new XMLSerializer().serializeToString(copy)}\n`;
}

// ------------------------------------------------------------------ progress view
function overallFraction(p) {
  const i = STAGES.indexOf(p.stage);
  if (p.stage === "done") return 1;
  if (i < 0) return 0;
  let done = 0;
  for (let j = 0; j < i; j++) done += STAGE_WEIGHT[STAGES[j]];
  return Math.min(1, done + STAGE_WEIGHT[p.stage] * (p.fraction || 0));
}

// The time left, once a tenth of the run is done and 3 s have passed (earlier, any estimate is mostly
// noise). The job's own estimate when the progress carries one (`seconds_left`: a number, or null while
// it has none): shown as given, never second-guessed here. Only a progress without the field (an older
// kernel) falls back to the stage weights: elapsed x (1 - done) / done. Either way rounded as a guess.
const ETA_MIN_FRACTION = 0.1, ETA_MIN_SECONDS = 3;
function timeLeft(p, frac, status) {
  if (status !== "running") return null;
  const elapsed = p.elapsed;
  if (!(frac >= ETA_MIN_FRACTION) || frac >= 1 || !(elapsed >= ETA_MIN_SECONDS)) return null;
  let left;
  if ("seconds_left" in p) {
    left = p.seconds_left;
    if (typeof left !== "number" || !Number.isFinite(left) || left < 0) return null;
  } else {
    left = (elapsed * (1 - frac)) / frac;
  }
  const text = left < 60 ? `${Math.max(5, Math.round(left / 5) * 5)} s` : left < 3600 ? `${Math.round(left / 60)} min`
    : `${(left / 3600).toFixed(1)} h`;
  return h("span", { class: "rx-eta", data: { seconds: left.toFixed(1) },
    title: "estimated from the time so far and the share of the run done; stages differ in speed, so it is a guess" },
  ` · about ${text} left`);
}

function lineChart(points, totalEpochs) {
  const W = 420, H = 130, L = 40, R = 40, T = 14, B = 22;
  const box = chartSvg("rx-chart", W, H, "training loss and running fidelity");
  box.appendChild(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "rx-chart-frame" }));
  const maxEpoch = Math.max(1, totalEpochs || 0, ...points.map((p) => p.epoch));
  const losses = points.map((p) => p.loss).filter((v) => v !== null);
  const lo = Math.min(...losses), hi = Math.max(...losses);
  const x = (e) => L + ((W - L - R) * e) / maxEpoch;
  const yLoss = (v) => T + (H - T - B) * (hi === lo ? 0.5 : (hi - v) / (hi - lo));
  const yFid = (v) => T + (H - T - B) * (1 - v);
  const path = (key, y) => points.filter((p) => p[key] !== null)
    .map((p, i) => `${i ? "L" : "M"}${x(p.epoch).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" ");
  box.appendChild(svg("path", { d: path("loss", yLoss), class: "rx-line-loss" }));
  box.appendChild(svg("path", { d: path("fidelity", yFid), class: "rx-line-fid" }));
  box.appendChild(svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "rx-axis rx-loss-label" }, fmt(hi, 3)));
  box.appendChild(svg("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "rx-axis rx-loss-label" }, fmt(lo, 3)));
  box.appendChild(svg("text", { x: W - R + 4, y: T + 8, class: "rx-axis rx-fid-label" }, "1"));
  box.appendChild(svg("text", { x: W - R + 4, y: H - B, class: "rx-axis rx-fid-label" }, "0"));
  box.appendChild(svg("text", { x: W / 2, y: H - 5, "text-anchor": "middle", class: "rx-axis" }, `epoch (of ${maxEpoch})`));
  const last = points[points.length - 1];
  return h("div", { class: "rx-chart-wrap" }, chartBox(box),
    h("div", { class: "rx-legend" },
      h("span", { class: "rx-key rx-key-loss" }, `loss ${fmt(last.loss, 4)}`),
      h("span", { class: "rx-key rx-key-fid" }, `running fidelity ${fmt(last.fidelity, 3)}`)));
}

function progressView(model, ui, redraw) {
  const p = model.get("progress") || {};
  const status = model.get("status");
  const stageIdx = STAGES.indexOf(p.stage);
  const stages = h("ol", { class: "rx-stages" }, STAGES.map((s, i) => h("li", {
    class: "rx-stage" + (i < stageIdx || p.stage === "done" ? " rx-stage-done" : i === stageIdx ? " rx-stage-active" : ""),
    data: { stage: s } }, STAGE_LABEL[s])));
  const frac = overallFraction(p);
  const bar = h("div", { class: "rx-bar", role: "progressbar", "aria-valuemin": "0", "aria-valuemax": "100",
    "aria-valuenow": String(Math.round(100 * frac)) },
  h("div", { class: "rx-bar-fill", style: `width:${(100 * frac).toFixed(1)}%` }));
  // a stopped run: the stage it reached stays marked and the bar stays where it was; a failure's
  // message is in the error box below, a requested cancel is said here, calmly, once
  const ended = p.ended === "failed" || p.ended === "cancelled";
  // "cancelled" is said once: the label, then where it stopped ("cancelled · during the search stage; …")
  const message = p.ended === "failed" ? `stopped during the ${p.stage} stage`
    : p.ended === "cancelled" ? (p.message || "").replace(/^cancelled /, "") : p.message || "";
  const parts = [stages, bar, h("div", { class: "rx-message" + (p.ended === "cancelled" ? " rx-note" : "") },
    h("span", { class: "rx-stage-name" }, ended ? p.ended : p.stage || "pending"), " · ", message,
    h("span", { class: "rx-elapsed" }, ` · ${fmt(p.elapsed || 0, 3)} s`),
    ended ? null : timeLeft(p, frac, status))];
  if (ended && p.found && p.found.length) {
    parts.push(h("div", { class: "rx-found" }, "statistics found before it stopped: ",
      p.found.map((f) => h("code", { class: "rx-code rx-found-item" }, f))));
  }
  if (ended) {
    parts.push(h("button", { class: "rx-button rx-retry", type: "button", data: { key: "retry" },
      on: { click: () => { ui.cancelling = false; ui.ask({ type: "retry" }); redraw(); } } }, "Retry"));
  }
  if (p.search) {
    const s = p.search;
    parts.push(h("div", { class: "rx-search" },
      h("div", null, `Searching statistic ${s.statistic}`, s.simulation ? ` (simulation ${s.simulation})` : "", ": best so far"),
      h("code", { class: "rx-code rx-search-best" }, s.best || "…"),
      h("span", { class: "rx-reward" }, " ", term("reward"), ` ${fmt(s.reward, 3)}`),
      s.found && s.found.length ? h("div", { class: "rx-found" }, "found: ",
        s.found.map((f) => h("code", { class: "rx-code rx-found-item" }, f))) : null));
  }
  const points = model.get("chart") || [];
  // the chart once it has points; before that one line, not an empty frame for the whole search
  // (a run stopped before training has no chart to come: nothing)
  if (points.length) parts.push(lineChart(points, p.stage === "student" ? p.total : null));
  else if (!ended) {
    parts.push(h("p", { class: "rx-help rx-chart-note" }, "The training chart (loss and running fidelity by epoch) " +
      "appears with the student's first epoch, after the search."));
  }
  if (status === "running" || status === "pending") {
    parts.push(h("button", { class: "rx-button rx-cancel", type: "button", disabled: ui.cancelling, data: { key: "cancel" },
      on: { click: () => { ui.cancelling = ui.ask({ type: "cancel" }); redraw(); } } },
    ui.cancelling ? "Cancelling…" : "Cancel"));
  }
  return h("section", { class: "rx-progress", data: { status } }, parts);
}

// ------------------------------------------------------------------ summary
// What pruning cost on held-out users, and the larger rule set one click away (exp.with_rules(k) in the
// kernel: every view then reads it; the Python object is unchanged). The report has no kernel: the figures only.
// "2 cards and 5 interaction rules": the scorecard's units, which the max_rules budget counts.
const units = (sm) => `${fmt(sm.n_cards)} card${sm.n_cards === 1 ? "" : "s"} and ${fmt(sm.n_interactions)} interaction rule${sm.n_interactions === 1 ? "" : "s"}`;
function pruningLine(results, ui) {
  const sm = results.summary;
  const view = results.view;
  const ask = (k) => { ui.withRulesError = ""; if (!ui.ask({ type: "with_rules", k, request: ++ui.seq })) ui.withRulesError = `Another rule set ${NO_KERNEL}.`; };
  const error = ui.withRulesError ? h("span", { class: "rx-user-error" }, ` ${ui.withRulesError}`) : null;
  if (view) {
    return h("div", { class: "rx-summary-line rx-pruning rx-pruning-shown", role: "status" },
      h("strong", null, `Showing exp.with_rules(${view.with_rules}): `),
      `held-out fidelity ${fmt(sm.fidelity_test, 3)}; exp itself is unchanged. `,
      h("button", { type: "button", class: "rx-button rx-pruning-back", on: { click: () => ask(null) } }, "Back to exp"), error);
  }
  if (sm.n_rules_unpruned == null || (sm.n_cards == null && sm.n_rules_unpruned === sm.n_rules) || sm.fidelity_test_unpruned == null) return null;
  const d = sm.fidelity_test - sm.fidelity_test_unpruned;
  const what = Math.abs(d) < 5e-4 ? "changed held-out fidelity by less than 0.001"
    : d < 0 ? `cost ${fmt(-d, 2)} of held-out fidelity` : `gained ${fmt(d, 2)} of held-out fidelity`;
  const now = sm.n_cards != null ? units(sm) : `${fmt(sm.n_rules)} rules`;
  return h("div", { class: "rx-summary-line rx-pruning" },
    `Pruning from ${fmt(sm.n_rules_unpruned)} rules to ${now} ${what} (${fmt(sm.fidelity_test_unpruned, 3)} with all ${fmt(sm.n_rules_unpruned)}, ${fmt(sm.fidelity_test, 3)} now). `,
    ui.standalone ? `exp.with_rules(${sm.n_rules_unpruned}) gives the larger set.`
      : h("button", { type: "button", class: "rx-button rx-pruning-more", on: { click: () => ask(sm.n_rules_unpruned) } }, `Show all ${fmt(sm.n_rules_unpruned)} rules`),
    error);
}

function summaryView(sm) {
  const item = (label, value, cls) => h("div", { class: "rx-figure" + (cls ? ` ${cls}` : "") },
    h("div", { class: "rx-figure-value" }, value), h("div", { class: "rx-figure-label" }, label));
  const rank = (k) => (SECONDS_ORDER.indexOf(k) < 0 ? SECONDS_ORDER.length : SECONDS_ORDER.indexOf(k));
  const secs = Object.entries(sm.seconds || {}).filter(([k]) => k !== "total")
    .sort(([a], [b]) => rank(a) - rank(b))  // stable: stages not listed keep their order, after the others
    .map(([k, v]) => `${k} ${fmt(v, 2)} s`).join(" · ");
  return h("section", { class: "rx-summary" },
    h("div", { class: "rx-figures" },
      item([term("held-out", "held out"), " ", term("fidelity"), sm.fidelity_test_ci && sm.fidelity_test_ci[0] != null
        ? ` (95%: ${fmt(sm.fidelity_test_ci[0], 2)} to ${fmt(sm.fidelity_test_ci[1], 2)})` : ""], fmt(sm.fidelity_test, 3), "rx-figure-main"),
      item(["training ", term("fidelity")], fmt(sm.fidelity_train, 3)),
      item("AUC teacher / rules", `${fmt(sm.auc_teacher, 3)} / ${fmt(sm.auc_student, 3)}`),
      sm.n_cards != null ? item(`cards + interaction rules (${fmt(sm.n_rules)} rules written out)`, `${fmt(sm.n_cards)} + ${fmt(sm.n_interactions)}`)
        : item(sm.n_rules_unpruned != null && sm.n_rules_unpruned !== sm.n_rules ? `rules (pruned from ${fmt(sm.n_rules_unpruned)})` : "rules", fmt(sm.n_rules)),
      item("statistics", fmt(sm.n_statistics)),
      item(term("literals", "literal"), fmt(sm.n_literals)),
      item(["users (", term("held out"), ")"], `${fmt(sm.n_users)} (${fmt(sm.n_test)})`)),
    (sm.warnings || []).length ? h("ul", { class: "rx-warnings", role: "note" },
      ...sm.warnings.map((w) => h("li", { class: "rx-warning" }, `Caution: ${w}`))) : null,
    sm.fidelity_meaning ? h("div", { class: "rx-summary-line rx-fidelity-meaning" }, sm.fidelity_meaning) : null,
    h("div", { class: "rx-summary-line" },
      `Teacher: ${sm.teacher} (scores: ${sm.score_unit || "raw"}) · student: ${sm.student} · score = ${points(sm.intercept)} + weights of the rules that fire · `,
      `time ${fmt((sm.seconds || {}).total, 3)} s (${secs})`));
}

// ------------------------------------------------------------------ summary: global importance
// One bar per statistic output: the share of the rule score's spread it carries on held-out users
// (rudi_explain/views/payloads.py, global_importance). HTML bars: the labels wrap at any width.
function importanceView(imp) {
  if (!imp || !imp.bars || !imp.bars.length) return null;
  const top = Math.max(...imp.bars.map((b) => b.share || 0)) || 1;
  return h("section", { class: "rx-importance-chart", role: "figure", "aria-label": "what moves the rule score" },
    h("h4", { class: "rx-importance-title" }, "What moves the rule score"),
    h("ol", { class: "rx-imp-bars" }, imp.bars.map((b) => h("li", { class: "rx-imp-row", data: { column: b.column, share: b.share } },
      h("span", { class: "rx-imp-label" }, withUnit(b)),
      h("span", { class: "rx-imp-track", "aria-hidden": "true" },
        h("span", { class: "rx-imp-bar", style: `width:${(100 * (b.share || 0) / top).toFixed(1)}%` })),
      h("span", { class: "rx-imp-share" }, pct(b.share, 0))))),
    h("p", { class: "rx-help rx-imp-caption" }, `Each bar: the variance, over the ${fmt(imp.n_users)} `, term("held-out", "held out"),
      " users, of the points the rules reading that statistic add to a user's score (a rule reading two statistics gives each half its ",
      "weight), as a share of the sum over all statistics. A long bar: that statistic sets users' scores apart most."));
}

// ------------------------------------------------------------------ summary: agreement on held-out users
// The share of the model's own attribution that falls on the events the fired rules read, over a sample of
// held-out users. It asks the model, so only when the button is pressed (the kernel bounds it in time).
function agreementHistogram(s) {
  const W = 360, H = 130, L = 34, R = 10, T = 10, B = 30;
  const method = METHOD_LABEL[s.method] || s.method;
  const box = chartSvg("rx-agree-hist", W, H, `rule-model agreement of ${s.n_defined} held-out users (${method}): ` +
    s.counts.map((c, i) => `${pct(s.edges[i], 0)} to ${pct(s.edges[i + 1], 0)}: ${c}`).join(", "));
  const maxC = Math.max(1, ...s.counts);
  const x = (v) => L + (W - L - R) * v;
  const y = (c) => T + (H - T - B) * (1 - c / maxC);
  s.counts.forEach((c, i) => {
    const x0 = x(s.edges[i]), x1 = x(s.edges[i + 1]);
    box.appendChild(svg("rect", { class: "rx-hist-bar", x: x0 + 0.5, y: y(c), width: Math.max(0.5, x1 - x0 - 1), height: H - B - y(c) },
      svg("title", null, `agreement ${pct(s.edges[i], 0)} to ${pct(s.edges[i + 1], 0)}: ${fmt(c)} users`)));
  });
  if (s.agreement_mean !== null) {
    const mx = x(s.agreement_mean);
    box.appendChild(svg("line", { class: "rx-agree-mean", x1: mx, x2: mx, y1: T - 4, y2: H - B },
      svg("title", null, `mean ${pct(s.agreement_mean, 0)}`)));
  }
  box.appendChild(svg("line", { class: "rx-chart-frame", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  box.appendChild(svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "rx-axis" }, fmt(maxC)));
  for (const v of [0, 0.5, 1]) {
    box.appendChild(svg("text", { x: x(v), y: H - B + 12, "text-anchor": v === 0 ? "start" : v === 1 ? "end" : "middle", class: "rx-axis" }, pct(v, 0)));
  }
  box.appendChild(svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "rx-axis" }, "share of attribution on the events the rules read"));
  return box;
}

function agreementPanel(ui, audit) {
  const g = ui.agree;
  const button = h("button", { class: "rx-button rx-agree-button", type: "button", data: { key: "agreement" },
    disabled: !!(g && g.loading), on: { click: () => audit.agreement() } },
  g && g.loading ? "Asking the model…" : g && (g.state || g.error) ? "Ask the model again" : "Rule-model agreement on held-out users");
  const parts = [h("div", { class: "rx-attr-bar-line" }, button,
    g && g.loading ? h("span", { class: "rx-attr-help", role: "status" }, g.of ? ` ${fmt(g.done)} of ${fmt(g.of)} users…` : " starting…")
      : !g ? h("span", { class: "rx-attr-help" }, " asks the model, for a sample of held-out users, how much of its own attribution falls on the events their fired rules read (up to 200 users, about 20 s at most).") : null)];
  if (g && g.error) parts.push(h("div", { class: "rx-user-error rx-agree-error", role: "alert" }, g.error));
  else if (g && g.state && !g.state.available) {
    parts.push(h("div", { class: "rx-attr-unavailable", role: "note" }, h("strong", null, "No rule-model agreement: "), g.state.reason));
  } else if (g && g.state && g.state.uninformative) {  // every user's rules read (nearly) all events: 100% says nothing
    parts.push(h("div", { class: "rx-attr-unavailable rx-agree-uninformative", role: "note" },
      h("strong", null, "Rule-model agreement not informative: "), g.state.uninformative + "."));
  } else if (g && g.state) {
    const s = g.state;
    const method = METHOD_LABEL[s.method] || s.method;
    const item = (label, value, cls) => h("div", { class: "rx-figure" + (cls ? ` ${cls}` : "") },
      h("div", { class: "rx-figure-value" }, value), h("div", { class: "rx-figure-label" }, label));
    const deciles = s.deciles ? s.deciles.map((d, i) => `${(i + 1) * 10}th ${pct(d, 0)}`).join(" · ") : "none: no user has a defined agreement";
    parts.push(h("div", { class: "rx-agree-body" },
      s.n_defined ? h("div", { class: "rx-hist-box" }, chartBox(agreementHistogram(s))) : null,
      h("div", { class: "rx-agree-text" },
        h("div", { class: "rx-figures" },
          item("median lift (agreement ÷ share of events the rules read)", s.lift_median === null ? "–" : `${fmt(s.lift_median, 2)}×`, "rx-figure-main rx-agree-lift-figure"),
          item("mean agreement", pct(s.agreement_mean, 0), "rx-agree-mean-figure"),
          item("median", pct(s.agreement_median, 0)),
          item("events the rules read (mean share)", pct(s.event_share_mean, 0)),
          item("held-out users", s.n_users === s.n_sampled ? `${fmt(s.n_users)} of ${fmt(s.n_pool)}` : `${fmt(s.n_users)} of ${fmt(s.n_sampled)} sampled (of ${fmt(s.n_pool)})`)),
        h("div", { class: "rx-agree-deciles" }, h("strong", null, "Deciles: "), deciles),
        h("div", { class: "rx-attr-key" }, `Method: ${method}, ${fmt(s.seconds, 2)} s. `,
          `No rule fired for ${fmt(s.n_no_rule)} of the ${fmt(s.n_users)} users` + (s.n_zero ? `, and ${fmt(s.n_zero)} had all attributions 0` : "") +
          ": their agreement is undefined and left out" + (s.n_uninformative ? `; so are the ${fmt(s.n_uninformative)} whose fired rules read nearly every event (their agreement is near 100% whatever the model attends to)` : "") +
          ". A lift above 1 means the model leans on the events the rules read more than an even spread of attribution would."),
        s.note ? h("div", { class: "rx-attr-note", role: "note" }, s.note) : null)));
  }
  return h("section", { class: "rx-agree-panel" }, parts);
}

// ------------------------------------------------------------------ rule cards
function literalChip(l) {
  // The literal as the rule says it; the pipeline text on hover.
  if (l.sentence) {
    return h("span", { class: "rx-literal", title: `${l.notation}\n${l.statistic_text}`, data: { literal: l.literal } },
      h("span", { class: "rx-literal-words" }, l.sentence));
  }
  return h("span", { class: "rx-literal", title: l.statistic_text, data: { literal: l.literal } },
    h("span", { class: "rx-literal-words" }, l.words),
    h("span", { class: "rx-op" }, l.op === ">" ? " > " : " ≤ "),
    h("span", { class: "rx-threshold" }, l.threshold_text),
    l.or_undefined ? h("span", { class: "rx-undef" }, " or undefined") : null);
}

function ruleBody(card) {
  if (card.connective === "AND" || card.connective === "OR") {
    const out = [];
    card.literals.forEach((l, i) => {
      if (i) out.push(h("span", { class: "rx-conn" }, card.connective === "AND" ? " and " : " or "));
      out.push(literalChip(l));
    });
    return h("div", { class: "rx-rule-text" }, "If ", out);
  }
  return h("div", { class: "rx-rule-text" }, "If ", h("span", { class: "rx-literal", title: card.notation || "" }, card.text));
}

function ruleCard(card, ui, openUser, redraw, nav) {
  const open = ui.openRule === card.index;
  const raise = card.weight > 0;
  const examples = open ? h("div", { class: "rx-examples", data: { ruleIndex: card.index } },
    h("div", { class: "rx-examples-title" }, `Example users it fires for (${fmt(card.n_fires)} in all), by teacher score:`),
    card.examples.length ? card.examples.map((u) => userLink(u, openUser, `rule-${card.index}-user`)) : h("span", null, "none")) : null;
  const toggle = () => { ui.openRule = open ? null : card.index; redraw(); };
  return h("div", {
    class: "rx-card" + (open ? " rx-open" : "") + (raise ? " rx-raises" : " rx-lowers"),
    data: { ruleIndex: card.index, key: `rule-${card.index}` }, tabindex: "0", role: "button", "aria-expanded": String(open),
    on: { click: (e) => { if (e.target.closest(".rx-user-link")) return; toggle(); },
      keydown: (e) => {  // Enter and Space, as for any button; only on the card itself, not its user links
        if (e.target !== e.currentTarget || (e.key !== "Enter" && e.key !== " ")) return;
        swallow(e); toggle();
      } },
  },
  h("div", { class: "rx-card-head" },
    h("span", { class: "rx-weight" }, signed(card.weight)),
    h("span", { class: "rx-direction" }, raise ? `raises the score by ${points(Math.abs(card.weight))}`
      : `lowers the score by ${points(Math.abs(card.weight))}`),
    h("span", { class: "rx-rule-id" }, `rule ${card.index + 1}`)),
  ruleBody(card),
  statLinks(card, nav),
  h("div", { class: "rx-card-figures" },
    h("span", { class: "rx-coverage" }, h("span", { class: "rx-cov-bar" },
      h("span", { class: "rx-cov-fill", style: `width:${(100 * (card.coverage || 0)).toFixed(1)}%` })),
    ` fires for ${pct(card.coverage)} of users`),
    h("span", { class: "rx-means" }, `mean teacher score where it fires ${fmt(card.mean_fires, 3)}, where not ${fmt(card.mean_not, 3)}`)),
  examples);
}

// The statistics a rule reads, each a link to its histogram in the Thresholds tab (and a way back).
function ruleColumns(card) {
  const seen = new Map();
  for (const l of card.literals || []) if (l.column !== undefined && !seen.has(l.column)) seen.set(l.column, l.words);
  return [...seen];
}

function statLinks(card, nav, inTable = false) {
  const cols = ruleColumns(card);
  if (!cols.length || !nav) return null;
  return h("div", { class: "rx-stat-links" }, inTable ? null : "Histogram: ", cols.map(([col, words], k) => [k && !inTable ? " · " : null,
    h("button", { class: "rx-stat-link", type: "button", data: { column: col, key: `rule-${card.index}-stat-${col}` },
      title: `the distribution of ${words} in the Thresholds tab`,
      on: { click: (e) => { e.stopPropagation(); nav.toStatistic(col, card.index); },
        keydown: (e) => { if (e.key === "Enter" || e.key === " ") e.stopPropagation(); } } }, words)]));
}

// The Rules tab: sort, filter, cards or a compact table.
const RULE_SORTS = { weight: "largest weight", coverage: "coverage", gap: "score gap" };

function sortedRules(rules, ui) {
  const q = (ui.ruleFilter || "").trim().toLowerCase();
  const words = q ? q.split(/\s+/) : [];
  const hay = (c) => [c.text, c.notation, `rule ${c.index + 1}`, ...(c.literals || []).flatMap((l) =>
    [l.words, l.statistic_text, l.sentence, l.notation, l.threshold_text])].filter(Boolean).join(" \n ").toLowerCase();
  const kept = rules.filter((c) => words.every((w) => hay(c).includes(w)));
  // "weight": how far a card moves scores, its spread (a rule's |weight|; a linear card's term, |weight| x
  // the range of its clipped values: its weight is per unit, rudi_explain/views/payloads.py rule_cards)
  const spread = (c) => c.spread ?? Math.abs(c.weight);
  const key = { weight: spread, coverage: (c) => c.coverage || 0, gap: (c) => scoreGap(c) ?? -Infinity }[ui.ruleSort] || spread;
  return kept.map((c, i) => [c, i]).sort((a, b) => key(b[0]) - key(a[0]) || a[1] - b[1]).map(([c]) => c);
}

function ruleTools(rules, shown, ui, redraw) {
  const stop = (e) => e.stopPropagation();  // typing here is not a notebook shortcut
  return h("div", { class: "rx-rule-tools", "data-lm-suppress-shortcuts": "true" },
    h("label", { class: "rx-tool" }, "Sort by ",
      h("select", { class: "rx-rule-sort", data: { key: "rule-sort" }, "aria-label": "sort the rules by",
        on: { change: (e) => { ui.ruleSort = e.target.value; redraw(); }, keydown: stop } },
      Object.entries(RULE_SORTS).map(([k, label]) => h("option", { value: k, selected: (ui.ruleSort || "weight") === k }, label)))),
    h("input", { class: "rx-rule-filter", type: "search", placeholder: "filter: statistic or words", value: ui.ruleFilter || "",
      "aria-label": "filter the rules by statistic or words", data: { key: "rule-filter" },
      on: { input: (e) => { ui.ruleFilter = e.target.value; redraw(); }, keydown: stop } }),
    h("button", { class: "rx-button rx-rule-compact", type: "button", "aria-pressed": String(!!ui.compact), data: { key: "rule-compact" },
      on: { click: () => { ui.compact = !ui.compact; redraw(); } } }, ui.compact ? "Cards" : "Compact table"),
    h("span", { class: "rx-rule-count", role: "status" }, shown === rules.length ? `${rules.length} rules` : `${shown} of ${rules.length} rules`));
}

function ruleTable(cards, ui, nav) {
  return scrollBox("rule-table", h("table", { class: "rx-table rx-rule-table" },
    h("thead", null, h("tr", null, ["rule", "weight", "if", "coverage", "score gap", "histogram"].map((c) => h("th", null, c)))),
    h("tbody", null, cards.map((c) => h("tr", { data: { ruleIndex: c.index }, class: c.weight > 0 ? "rx-raises" : "rx-lowers" },
      h("td", { class: "rx-num" }, String(c.index + 1)),
      h("td", { class: "rx-num rx-weight" }, signed(c.weight)),
      h("td", { class: "rx-rule-cell", title: c.notation || "" }, c.text),
      h("td", { class: "rx-num" }, pct(c.coverage)),
      h("td", { class: "rx-num", title: "mean teacher score where it fires minus where it does not" }, fmt(scoreGap(c), 3)),
      h("td", { class: "rx-stat-cell" }, statLinks(c, nav, true)))))));
}

function rulesView(results, ui, openUser, redraw, nav) {
  const rules = results.rules || [];
  const cards = sortedRules(rules, ui);
  const sortText = RULE_SORTS[ui.ruleSort || "weight"];
  return h("section", { class: "rx-rules" + (ui.compact ? " rx-compact" : "") },
    ruleTools(rules, cards.length, ui, redraw),
    h("p", { class: "rx-help" }, `Ordered by ${sortText} first. `, ui.compact ? "A" : "Click a card for example users it fires for; a",
      " statistic's name leads to its histogram. Each rule is made of ", term("literals", "literal"), "."),
    !cards.length ? h("p", { class: "rx-help rx-no-match" }, "No rule matches the filter.")
      : ui.compact ? ruleTable(cards, ui, nav) : cards.map((c) => ruleCard(c, ui, openUser, redraw, nav)));
}

function userLink(u, openUser, where) {
  return h("button", { class: "rx-user-link", type: "button", data: { user: u.id, key: `${where}-${u.id}` },
    on: { click: (e) => { e.stopPropagation(); openUser(u.id); } } },
  h("span", { class: "rx-user-id" }, u.id), u.teacher !== undefined ? h("span", { class: "rx-user-score" }, ` ${fmt(u.teacher, 3)}`) : null);
}

// ------------------------------------------------------------------ thresholds
// A bin with fewer users than this share of the largest count or than THIN_MIN users is "thin": greyed,
// since its mean teacher score rests on too few users to read.
const THIN_MIN = 5, THIN_SHARE = 0.02;
const isThin = (c, total) => c < Math.max(THIN_MIN, THIN_SHARE * total);

function histogram(t, mark) {
  const W = 460, H = 164, L = 44, R = 44, T = 10, B = 40;
  const box = chartSvg("rx-hist", W, H, `distribution of ${t.words}`);
  const edges = t.edges, counts = t.counts;
  if (!edges.length) {
    box.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "undefined for every user"));
    return box;
  }
  const lo = edges[0], hi = edges[edges.length - 1];
  const x = (v) => L + (W - L - R) * (Math.min(Math.max(v, lo), hi) - lo) / (hi - lo || 1);
  const maxC = Math.max(1, ...counts);
  const y = (c) => T + (H - T - B) * (1 - c / maxC);
  const total = counts.reduce((a, b) => a + b, 0);
  counts.forEach((c, i) => {
    const x0 = x(edges[i]), x1 = x(edges[i + 1]);
    const thin = isThin(c, total);
    box.appendChild(svg("rect", { class: "rx-hist-bar" + (thin ? " rx-hist-thin" : ""), x: x0 + 0.5, y: y(c), width: Math.max(0.5, x1 - x0 - 1), height: H - B - y(c) },
      svg("title", null, `${edgeText(t, i)} to ${edgeText(t, i + 1)}: ${fmt(c)} users, mean teacher score ${fmt(t.mean_teacher[i], 3)}` +
        (thin ? " (few users: greyed)" : ""))));
  });
  // Mean teacher score per bin, on its own scale (right axis).
  const means = t.mean_teacher.filter((m) => m !== null);
  if (means.length) {
    const mlo = Math.min(...means), mhi = Math.max(...means);
    const ym = (m) => T + (H - T - B) * (mhi === mlo ? 0.5 : (mhi - m) / (mhi - mlo));
    let d = "";
    t.mean_teacher.forEach((m, i) => {
      if (m === null) return;
      const cx = (x(edges[i]) + x(edges[i + 1])) / 2;
      d += `${d ? "L" : "M"}${cx.toFixed(1)},${ym(m).toFixed(1)} `;
      box.appendChild(svg("circle", { class: "rx-hist-mean", cx, cy: ym(m), r: 2.5 }));
    });
    box.appendChild(svg("path", { class: "rx-hist-mean-line", d }));
    box.appendChild(svg("text", { x: W - R + 4, y: T + 8, class: "rx-axis rx-mean-label" }, fmt(mhi, 3)));
    box.appendChild(svg("text", { x: W - R + 4, y: H - B, class: "rx-axis rx-mean-label" }, fmt(mlo, 3)));
  }
  // thresholds used by rules labelled under the axis, left to right; a label that would overlap the
  // one before it is left to the line's hover text
  let lastLabel = -Infinity;
  for (const th of t.thresholds.filter((q) => q.in_rules).slice().sort((a, b) => a.threshold - b.threshold)) {
    const tx = x(th.threshold);
    if (tx - lastLabel < 34) continue;
    box.appendChild(svg("text", { x: tx, y: H - B + 12, "text-anchor": "middle", class: "rx-axis rx-threshold-label",
      "data-literal": th.literal }, th.value_text ?? th.threshold_text));
    lastLabel = tx;
  }
  if (mark && mark.value !== null && mark.value !== undefined) {
    const ux = x(mark.value);
    box.appendChild(svg("line", { class: "rx-hist-user", x1: ux, x2: ux, y1: T - 6, y2: H - B, "data-value": mark.value },
      svg("title", null, `user ${mark.id}: ${mark.text ?? fmt(mark.value)}`)));
    box.appendChild(svg("path", { class: "rx-hist-user-mark", d: `M${ux - 5},${T - 9}L${ux + 5},${T - 9}L${ux},${T - 2}Z` }));
  }
  for (const th of t.thresholds) {
    const tx = x(th.threshold);
    box.appendChild(svg("line", { class: "rx-hist-threshold" + (th.in_rules ? " rx-in-rules" : ""), x1: tx, x2: tx, y1: T - 4, y2: H - B },
      svg("title", null, `${literalWords(t, th)}: ${pct(th.share_above)} of users above`)));
    // what-if: where a typed threshold would go (hidden until one is typed; moved in place, no redraw)
    if (th.in_rules) box.appendChild(svg("line", { class: "rx-hist-proposed", x1: tx, x2: tx, y1: T - 4, y2: H - B, visibility: "hidden",
      "data-literal": th.literal }));
  }
  box.rxScale = x;  // the what-if line reuses the histogram's scale
  box.appendChild(svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "rx-axis" }, fmt(maxC)));
  box.appendChild(svg("text", { x: L, y: H - 6, class: "rx-axis" }, edgeText(t, 0)));
  box.appendChild(svg("text", { x: W - R, y: H - 6, "text-anchor": "end", class: "rx-axis" }, (t.discrete ? "" : "≥ ") + edgeText(t, edges.length - 1)));
  return box;
}

// The value of each statistic output for the user open in the drill-down, by output column: the raw
// number places the mark, the text (the payload's, written the one way) is what the reader sees.
function userValues(user, results) {
  if (!user) return new Map();
  const column = new Map((results.thresholds || []).flatMap((t) => t.thresholds.map((th) => [th.literal, t.column])));
  return new Map((user.literals || []).filter((l) => column.has(l.literal))
    .map((l) => [column.get(l.literal), { value: l.value, text: l.value_text ?? (l.value === null ? "undefined" : fmt(l.value)) }]));
}

// A literal in words, its threshold written the one way ("share of events online > 10.8%").
const literalWords = (t, th) => (th.value_text ? `${t.words} > ${th.value_text}` : th.name);

// A statistic's literals by threshold value (the payload sorts them; an older saved one may not).
const byThreshold = (ths) => ths.slice().sort((a, b) => a.threshold - b.threshold);

function thresholdsView(results, ui, redraw, audit, nav) {
  const all = results.thresholds || [];
  const inRules = all.filter((t) => t.thresholds.some((th) => th.in_rules));
  const list = ui.allThresholds || !inRules.length ? all : inRules;
  const more = all.length - list.length;
  const values = ui.markUser && ui.user ? userValues(ui.user, results) : new Map();
  const readers = new Map();  // output column -> the rules reading it
  for (const c of results.rules || []) for (const [col] of ruleColumns(c)) (readers.get(col) || readers.set(col, []).get(col)).push(c);
  return h("section", { class: "rx-thresholds" },
    h("p", { class: "rx-help" }, "Each statistic over all users, the most important first (the largest sum of |weight| of the rules reading it): ",
      "bars count users (grey: a thin bin, too few users to read its mean), dots are the mean teacher score per bin (right axis), ",
      "red lines are thresholds used by rules (labelled under the axis), grey lines other ", term("literal"), " thresholds. ",
      ui.standalone ? "exp.with_threshold(literal, value) moves a threshold in code." : ["What if: type or slide a rule threshold to see its rules' coverage and the ",
        term("held-out", "held out"), " ", term("fidelity"), " change (nothing is refitted); exp.with_threshold(literal, value) makes the move in code."]),
    values.size ? h("div", { class: "rx-user-mark-note", role: "note" },
      h("span", { class: "rx-user-mark-key", "aria-hidden": "true" }, "▼"), ` user ${ui.user.id}'s values are marked on the histograms. `,
      h("button", { class: "rx-button rx-user-mark-back", type: "button", data: { key: "user-mark-back" }, on: { click: () => nav.toUser() } },
        `Back to user ${ui.user.id}`), " ",
      h("button", { class: "rx-button rx-user-mark-clear", type: "button", data: { key: "user-mark-clear" },
        on: { click: () => { ui.markUser = false; redraw(); } } }, "Hide the marks")) : null,
    list.map((t) => h("div", { class: "rx-threshold-block" + (ui.statTarget === t.column ? " rx-target" : ""), data: { column: t.column, key: `stat-${t.column}` },
      tabindex: "-1" },
      h("div", { class: "rx-threshold-title" }, withUnit(t),
        t.importance ? h("span", { class: "rx-importance", title: "the sum of |weight| of the rules reading this statistic" },
          ` · importance ${fmt(t.importance, 3)}`) : null),
      readers.has(t.column) ? h("div", { class: "rx-stat-rules" }, "Read by ", readers.get(t.column).map((c, k) => [k ? ", " : null,
        h("button", { class: "rx-rule-link", type: "button", data: { ruleIndex: c.index, key: `stat-${t.column}-rule-${c.index}` },
          on: { click: () => nav.toRule(c.index) } }, `rule ${c.index + 1}`)]),
        ui.statTarget === t.column && ui.fromRule !== null && ui.fromRule !== undefined
          ? [" · ", h("button", { class: "rx-button rx-back-rule", type: "button", data: { key: "back-rule" },
            on: { click: () => nav.toRule(ui.fromRule) } }, `Back to rule ${ui.fromRule + 1}`)] : null) : null,
      values.has(t.column) ? h("div", { class: "rx-user-value" }, `User ${ui.user.id}: `,
        h("strong", { class: "rx-user-value-text" }, values.get(t.column).text)) : null,
      h("div", { class: "rx-threshold-body" }, h("div", { class: "rx-hist-box" },
        chartBox(histogram(t, values.has(t.column) ? { id: ui.user.id, ...values.get(t.column) } : null))),
        scrollBox(`thresholds-${t.column}`, h("table", { class: "rx-table rx-threshold-table" },
          h("thead", null, h("tr", null, h("th", null, "literal"), h("th", null, "users above"), h("th", null, "in rules"))),
          h("tbody", null, byThreshold(t.thresholds).map((th) => h("tr", { class: th.in_rules ? "rx-in-rules" : "", data: { literal: th.literal } },
            h("td", null, `> ${th.value_text ?? th.threshold_text}`), h("td", null, pct(th.share_above)), h("td", null, th.in_rules ? "yes" : "")))))),
        t.n_undefined ? h("div", { class: "rx-undefined-note" },
          `${fmt(t.n_undefined)} users undefined (mean teacher score ${fmt(t.mean_undefined, 3)})`) : null),
      ui.standalone ? null : whatIfControl(t, ui, results, audit, redraw))),
    more > 0 || ui.allThresholds ? h("button", { class: "rx-button rx-more", type: "button", data: { key: "more-thresholds" },
      on: { click: () => { ui.allThresholds = !ui.allThresholds; redraw(); } } },
    ui.allThresholds ? "Show only the statistics used by rules" : `Show ${more} more statistic outputs (literals no rule uses)`) : null);
}


// ------------------------------------------------------------------ the scorecard
// SEMANTICS.md, "The scorecard": score = base + each card's points + the interaction rules that fire.
// Every text here is the payload's (views/scorecard_view.py): the card rows are Card.rows(), the text
// form's own labels and points; the raw numbers only place the marks of the charts.
const SC_W = 460, SC_H = 132, SC_L = 52, SC_R = 14, SC_T = 10, SC_B = 34, SC_GAP = 18;

function scoreAxis(box, lo, hi, y) {
  box.appendChild(svg("line", { x1: SC_L, x2: SC_W - SC_R, y1: y(0), y2: y(0), class: "rx-zero" }));
  box.appendChild(svg("text", { x: SC_L - 4, y: y(hi) + 8, "text-anchor": "end", class: "rx-axis" }, signed(hi)));
  box.appendChild(svg("text", { x: SC_L - 4, y: y(lo), "text-anchor": "end", class: "rx-axis" }, signed(lo)));
}

// Points per band as steps, the value bands ascending at equal widths (their edges labelled beneath),
// the undefined band on its own at the left.
function scoreStepChart(card) {
  const box = chartSvg("rx-sc-chart rx-sc-steps", SC_W, SC_H, `points per band of ${card.name}`);
  const rows = card.rows, und = rows.filter((r) => r.band === -1), bands = rows.filter((r) => r.band >= 0);
  const vals = rows.map((r) => r.value || 0), lo = Math.min(0, ...vals), hi = Math.max(0, ...vals);
  const HS = SC_H - SC_T - SC_B;
  const y = (v) => SC_T + HS * (1 - (v - lo) / (hi - lo || 1));
  const undW = und.length ? 56 : 0, x0 = SC_L + (und.length ? undW + SC_GAP : 0);
  const bw = (SC_W - SC_R - x0) / Math.max(1, bands.length);
  scoreAxis(box, lo, hi, y);
  const mark = (r, a, b) => {
    box.appendChild(svg("rect", { x: a, y: SC_T, width: Math.max(1, b - a), height: HS, class: "rx-band", "data-band": r.band },
      svg("title", null, `${r.label}: ${r.points} points, ${r.users} of users, mean teacher score ${r.teacher}`)));
    box.appendChild(svg("line", { x1: a + 1, x2: b - 1, y1: y(r.value || 0), y2: y(r.value || 0),
      class: "rx-sc-step" + ((r.value || 0) >= 0 ? " rx-up" : " rx-down"), "data-band": r.band, "data-points": r.points }));
  };
  if (und.length) {  // its own level, apart from the value bands' steps
    mark(und[0], SC_L, SC_L + undW);
    const yu = y(und[0].value || 0).toFixed(1);
    box.appendChild(svg("path", { d: `M${SC_L + 2},${yu}L${SC_L + undW - 2},${yu}`, class: "rx-step rx-sc-undefined" }));
    box.appendChild(svg("text", { x: SC_L + undW / 2, y: SC_H - SC_B + 14, "text-anchor": "middle", class: "rx-axis" }, "undefined"));
  }
  let d = "";
  bands.forEach((r, k) => {
    const a = x0 + k * bw, b = a + bw;
    d += `${k ? "L" : "M"}${a.toFixed(1)},${y(r.value || 0).toFixed(1)}L${b.toFixed(1)},${y(r.value || 0).toFixed(1)}`;
    mark(r, a, b);
  });
  box.appendChild(svg("path", { d, class: "rx-step" }));
  let last = -Infinity;
  (card.edges_text || []).forEach((t, k) => {
    const tx = x0 + (k + 1) * bw;
    box.appendChild(svg("line", { x1: tx, x2: tx, y1: SC_T, y2: SC_H - SC_B + 3, class: "rx-effect-threshold" }, svg("title", null, t)));
    if (tx - last >= 8 * t.length) {  // a label that would overlap the one before it is left to the hover text
      box.appendChild(svg("text", { x: tx, y: SC_H - SC_B + 14, "text-anchor": "middle", class: "rx-axis rx-sc-edge" }, t));
      last = tx;
    }
  });
  box.appendChild(svg("text", { x: SC_W - SC_R, y: SC_H - 4, "text-anchor": "end", class: "rx-axis" }, "bands, low to high"));
  return box;
}

// A linear card: points rise (or fall) steadily from lo to hi and stay level beyond.
function scoreLineChart(card) {
  const box = chartSvg("rx-sc-chart rx-sc-line", SC_W, SC_H, `points along ${card.name}`);
  const line = card.line, und = card.rows.filter((r) => r.band === -1);
  const vals = [line.points_lo || 0, line.points_hi || 0, ...und.map((r) => r.value || 0)];
  const lo = Math.min(0, ...vals), hi = Math.max(0, ...vals), HS = SC_H - SC_T - SC_B;
  const y = (v) => SC_T + HS * (1 - (v - lo) / (hi - lo || 1));
  const undW = und.length ? 56 : 0, x0 = SC_L + (und.length ? undW + SC_GAP : 0);
  scoreAxis(box, lo, hi, y);
  if (und.length) {
    const r = und[0];
    box.appendChild(svg("line", { x1: SC_L + 1, x2: SC_L + undW - 1, y1: y(r.value || 0), y2: y(r.value || 0), class: "rx-sc-step rx-sc-undefined", "data-band": -1 },
      svg("title", null, `${r.label}: ${r.points} points, ${r.users} of users`)));
    box.appendChild(svg("text", { x: SC_L + undW / 2, y: SC_H - SC_B + 14, "text-anchor": "middle", class: "rx-axis" }, "undefined"));
  }
  const a = x0 + 12, b = SC_W - SC_R - 12;
  box.appendChild(svg("path", { class: "rx-step rx-sc-linear", d: `M${x0},${y(line.points_lo || 0).toFixed(1)}L${a},${y(line.points_lo || 0).toFixed(1)}` +
    `L${b},${y(line.points_hi || 0).toFixed(1)}L${SC_W - SC_R},${y(line.points_hi || 0).toFixed(1)}` }, svg("title", null, line.text)));
  box.appendChild(svg("text", { x: a, y: SC_H - SC_B + 14, "text-anchor": "middle", class: "rx-axis" }, line.lo_text));
  box.appendChild(svg("text", { x: b, y: SC_H - SC_B + 14, "text-anchor": "end", class: "rx-axis" }, line.hi_text));
  return box;
}

function scoreCard(card) {
  return h("div", { class: "rx-sc-card", data: { card: card.index, column: card.column } },
    h("div", { class: "rx-threshold-title rx-sc-name" }, card.name),
    h("div", { class: "rx-sc-body" },
      scrollBox(`sc-card-${card.index}`, h("table", { class: "rx-table rx-sc-table" },
        h("thead", null, h("tr", null, h("th", null, card.linear ? "linear" : "band"), h("th", null, "points"), h("th", null, "users"),
          h("th", null, "teacher"))),
        h("tbody", null, card.rows.map((r) => h("tr", { data: { band: r.band } },
          h("td", { class: "rx-sc-label" }, r.label), h("td", { class: "rx-num rx-sc-points" }, r.points),
          h("td", { class: "rx-num rx-sc-users" }, r.users), h("td", { class: "rx-num rx-sc-teacher" }, r.teacher)))))),
      chartBox(card.linear ? scoreLineChart(card) : scoreStepChart(card))),
    card.rows.filter((r) => r.note).map((r) => h("div", { class: "rx-undefined-note rx-sc-note", data: { band: r.band } },
      `note on '${r.label}': ${r.note}`)));
}

function scorecardView(results) {
  const sc = results.scorecard;
  if (!sc) return h("p", { class: "rx-help" }, "These rules are a list (the first that holds decides): they have no scorecard.");
  const inter = sc.interactions || [];
  return h("section", { class: "rx-scorecard" },
    h("p", { class: "rx-sc-headline" }, h("code", { class: "rx-code" }, sc.headline)),
    // its sentences, each whole (a text past 500 characters is shortened in the payload)
    (sc.choice && sc.choice.length) ? h("p", { class: "rx-help rx-sc-choice" }, [].concat(sc.choice).join(" ")) : null,
    h("p", { class: "rx-help" }, "One card per statistic: every user is in exactly one band of each card and gets its points ",
      "(centred: the users' mean on a card is 0, so + adds more than the statistic does on average). ",
      "Users: the share of training users in the band; teacher: their mean teacher score. print(exp.scorecard) gives the same text."),
    (sc.cards || []).map((c) => scoreCard(c)),
    h("h4", null, `Interaction rules (${inter.length})`),
    inter.length ? scrollBox("sc-interactions", h("table", { class: "rx-table rx-sc-interactions" },
      h("thead", null, h("tr", null, h("th", null, "points"), h("th", null, "interaction rule (fires when it holds)"), h("th", null, "users"))),
      h("tbody", null, inter.map((r) => h("tr", { data: { interaction: r.index } },
        h("td", { class: "rx-num rx-sc-points" }, r.weight_text), h("td", null, r.text), h("td", { class: "rx-num" }, r.users))))))
      : h("p", { class: "rx-help" }, "None: the cards alone give the score."));
}

// One user on the scorecard: the band and points on each card, the interaction rules that fire, and
// the sum: base + the cards' points + those rules' weights is the rules' score.
function userScorecard(s) {
  if (!s) return null;
  const parts = [s.base_text, ...s.cards.map((c) => points(c.points, true)), ...s.interactions.map((r) => points(r.weight, true))];
  return h("div", { class: "rx-user-scorecard" },
    scrollBox("user-scorecard", h("table", { class: "rx-table rx-user-sc" },
      h("thead", null, h("tr", null, ["card", "this user's value", "band", "points"].map((c) => h("th", null, c)))),
      h("tbody", null, s.cards.map((c) => h("tr", { data: { card: c.index, band: c.band } },
        h("td", null, c.name), h("td", { class: "rx-num rx-sc-value" }, c.value_text), h("td", { class: "rx-sc-label" }, c.label),
        h("td", { class: "rx-num rx-sc-points" }, c.points_text))),
      s.interactions.map((r) => h("tr", { class: "rx-sc-fired", data: { interaction: r.index } },
        h("td", null, "interaction rule"), h("td", null, ""), h("td", null, r.text), h("td", { class: "rx-num rx-sc-points" }, r.weight_text)))))),
    h("div", { class: "rx-sum-check" + (s.adds_up ? "" : " rx-user-error"), data: { addsUp: String(s.adds_up) } },
      `Sum: ${parts.join(" ")} (base, cards${s.interactions.length ? ", interaction rules" : ""}) = ${s.total_text}; `,
      `the rules' score is ${s.score_text}`, s.adds_up ? " ✓" : " ✗ (they differ)"));
}

// ------------------------------------------------------------------ effects and the fidelity curve
function curveChart(points) {
  const W = 460, H = 200, L = 44, R = 14, T = 12, B = 34;
  const box = chartSvg("rx-curve", W, H, "held-out fidelity against the number of rules");
  box.appendChild(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "rx-chart-frame" }));
  const ks = points.map((p) => p.n_rules);
  const fs = points.flatMap((p) => [p.fidelity_test, p.fidelity_valid]).filter((v) => v !== null);
  const kmax = Math.max(...ks), kmin = Math.min(...ks, 1);
  const lo = Math.min(...fs) - 0.01, hi = Math.max(...fs) + 0.01;
  const x = (k) => L + (W - L - R) * (kmax === kmin ? 0.5 : (k - kmin) / (kmax - kmin));
  const y = (f) => T + (H - T - B) * (1 - (f - lo) / (hi - lo || 1));
  const sorted = points.slice().sort((a, b) => a.n_rules - b.n_rules);
  const line = (key) => sorted.filter((p) => p[key] !== null).map((p, i) => `${i ? "L" : "M"}${x(p.n_rules).toFixed(1)},${y(p[key]).toFixed(1)}`).join("");
  box.appendChild(svg("path", { d: line("fidelity_valid"), class: "rx-line-valid" }));
  box.appendChild(svg("path", { d: line("fidelity_test"), class: "rx-line-fid" }));
  for (const p of sorted) {
    box.appendChild(svg("circle", { cx: x(p.n_rules), cy: y(p.fidelity_test), r: p.default || p.current ? 4.5 : 2.5,
      class: "rx-curve-point" + (p.default ? " rx-curve-default" : "") + (p.current ? " rx-curve-current" : ""), data: { nRules: p.n_rules } },
    svg("title", null, `${p.n_rules} rules: held-out fidelity ${fmt(p.fidelity_test, 3)}, validation ${fmt(p.fidelity_valid, 3)}${p.default ? " (default)" : ""}`)));
  }
  for (const k of [kmin, kmax]) box.appendChild(svg("text", { x: x(k), y: H - B + 14, "text-anchor": "middle", class: "rx-axis" }, String(k)));
  box.appendChild(svg("text", { x: (L + W - R) / 2, y: H - 4, "text-anchor": "middle", class: "rx-axis" }, "number of rules"));
  box.appendChild(svg("text", { x: L - 4, y: T + 8, "text-anchor": "end", class: "rx-axis" }, fmt(hi, 3)));
  box.appendChild(svg("text", { x: L - 4, y: H - B, "text-anchor": "end", class: "rx-axis" }, fmt(lo, 3)));
  return h("div", { class: "rx-chart-wrap" }, chartBox(box), h("div", { class: "rx-legend" },
    h("span", { class: "rx-key rx-key-fid" }, "held-out fidelity"), h("span", { class: "rx-key rx-key-valid" }, "validation fidelity"),
    h("span", { class: "rx-key" }, "large dot: the rules shown (the default)")));
}

function effectChart(e) {
  const W = 460, L = 52, R = 14, T = 10, HS = 110, HH = 46, GAP = 16, B = 20;
  const H = T + HS + GAP + HH + B;
  const box = chartSvg("rx-effect", W, H, `net effect of ${e.words} on the rule score, and the users' distribution`);
  if (!e.edges.length) {
    box.appendChild(svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle" }, "undefined for every user"));
    return box;
  }
  const lo = e.edges[0], hi = e.edges[e.edges.length - 1];
  const x = (v) => L + (W - L - R) * (Math.min(Math.max(v, lo), hi) - lo) / (hi - lo || 1);
  const effs = e.effect.filter((v) => v !== null);
  const elo = Math.min(0, ...effs), ehi = Math.max(0, ...effs);
  const y = (v) => T + HS * (1 - (v - elo) / (ehi - elo || 1));
  box.appendChild(svg("line", { x1: L, x2: W - R, y1: y(0), y2: y(0), class: "rx-zero" }));
  // the step function: band b runs from threshold b-1 to threshold b
  const cuts = [lo, ...e.thresholds.map((t) => Math.min(Math.max(t, lo), hi)), hi];
  let d = "";
  e.effect.forEach((v, b) => {
    const x0 = x(cuts[b]), x1 = x(cuts[b + 1]), yy = y(v || 0);
    d += `${b ? "L" : "M"}${x0.toFixed(1)},${yy.toFixed(1)}L${x1.toFixed(1)},${yy.toFixed(1)}`;
  });
  box.appendChild(svg("path", { d, class: "rx-step" }));
  e.effect.forEach((v, b) => {
    const x0 = x(cuts[b]), x1 = x(cuts[b + 1]);
    const from = b ? `more than ${e.threshold_text[b - 1]}` : "lowest values";
    const to = b < e.thresholds.length ? ` up to ${e.threshold_text[b]}` : "";
    box.appendChild(svg("rect", { x: x0, y: T, width: Math.max(1, x1 - x0), height: HS, class: "rx-band" },
      svg("title", null, `${from}${to}: ${signed(v)} to the rule score (${fmt(e.n_band[b])} users)`)));
  });
  let lastLabel = -Infinity;
  e.thresholds.forEach((t, i) => {
    const tx = x(t);
    box.appendChild(svg("line", { x1: tx, x2: tx, y1: T, y2: T + HS + GAP + HH, class: "rx-effect-threshold" },
      svg("title", null, `threshold ${e.threshold_text[i]}`)));
    if (tx - lastLabel >= 26) {  // labels that would overlap are left to the hover text
      box.appendChild(svg("text", { x: tx, y: T + HS + GAP - 3, "text-anchor": "middle", class: "rx-axis" }, e.threshold_text[i]));
      lastLabel = tx;
    }
  });
  box.appendChild(svg("text", { x: L - 4, y: y(ehi) + 8, "text-anchor": "end", class: "rx-axis" }, signed(ehi)));
  box.appendChild(svg("text", { x: L - 4, y: y(elo), "text-anchor": "end", class: "rx-axis" }, signed(elo)));
  // the users' distribution beneath
  const top = T + HS + GAP, maxC = Math.max(1, ...e.counts);
  e.counts.forEach((c, i) => {
    const x0 = x(e.edges[i]), x1 = x(e.edges[i + 1]), hh = HH * c / maxC;
    box.appendChild(svg("rect", { x: x0 + 0.5, y: top + HH - hh, width: Math.max(0.5, x1 - x0 - 1), height: hh, class: "rx-hist-bar" },
      svg("title", null, `${edgeText(e, i)} to ${edgeText(e, i + 1)}: ${fmt(c)} users`)));
  });
  box.appendChild(svg("text", { x: L - 4, y: top + 10, "text-anchor": "end", class: "rx-axis" }, "users"));
  box.appendChild(svg("text", { x: L, y: H - 5, class: "rx-axis" }, edgeText(e, 0)));
  box.appendChild(svg("text", { x: W - R, y: H - 5, "text-anchor": "end", class: "rx-axis" }, (e.discrete ? "" : "≥ ") + edgeText(e, e.edges.length - 1)));
  return box;
}

// Teacher percentile (x) against rule-score percentile (y) on held-out users: the two scores live on
// different scales, their ranks do not, so the diagonal is where the rules rank a user as the model does.
// A point's hover names the user and both scores; a click opens the user.
function scatterChart(f, openUser) {
  const W = 460, H = 280, L = 48, R = 14, T = 12, B = 36;
  const box = chartSvg("rx-scatter", W, H, "teacher percentile against rule-score percentile, held-out users");
  box.appendChild(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, class: "rx-chart-frame" }));
  const X = (p) => L + (W - L - R) * p / 100, Y = (p) => H - B - (H - T - B) * p / 100;
  box.appendChild(svg("line", { x1: X(0), y1: Y(0), x2: X(100), y2: Y(100), class: "rx-diagonal" },
    svg("title", null, "the diagonal: the rules rank the user as the model does")));
  for (const p of f.points) {
    if (p.teacher_pct === undefined) continue;  // an older payload: no percentiles to place it by
    const c = svg("circle", { cx: X(p.teacher_pct), cy: Y(p.student_pct), r: 3, class: "rx-scatter-point", tabindex: "-1",
      "data-user": p.id }, svg("title", null, `user ${p.id}: teacher ${fmt(p.teacher, 4)} (${percentileWords(p.teacher_pct)}), ` +
      `rules ${points(p.student)} (${percentileWords(p.student_pct)}); click to open`));
    if (openUser) c.addEventListener("click", () => openUser(p.id));
    box.appendChild(c);
  }
  box.appendChild(svg("text", { x: L + (W - L - R) / 2, y: H - 6, "text-anchor": "middle", class: "rx-axis" }, "teacher percentile"));
  box.appendChild(svg("text", { x: 12, y: T + (H - T - B) / 2, "text-anchor": "middle", class: "rx-axis",
    transform: `rotate(-90 12 ${T + (H - T - B) / 2})` }, "rule-score percentile"));
  for (const v of [0, 50, 100]) {
    box.appendChild(svg("text", { x: X(v), y: H - B + 14, "text-anchor": "middle", class: "rx-axis" }, String(v)));
    box.appendChild(svg("text", { x: L - 4, y: Y(v) + 4, "text-anchor": "end", class: "rx-axis" }, String(v)));
  }
  return box;
}

function faithfulView(f, openUser) {
  if (!f || !f.points || !f.points.length) return null;
  return [h("h4", null, "How faithful: teacher against rules on held-out users"),
    h("p", { class: "rx-help" }, "Rank correlation ",
      h("strong", { class: "rx-spearman" }, f.spearman === null ? "–" : fmt(f.spearman, 3)),
      ` (Spearman, over ${fmt(f.n_test)} held-out users): 1 when the rules rank every user as the model does, 0 for no relation. `,
      "The summary's held-out fidelity counts pairs of users in the same order instead; both read ranks, not scores. ",
      `${fmt(f.points.length)} users drawn; on the diagonal the rules rank a user as the model does. Hover a point for its user, click to open it.`),
    chartBox(scatterChart(f, openUser)),
    h("h4", null, "Users the rules explain worst"),
    h("p", { class: "rx-help" }, "Held-out users whose rank under the rules is farthest from their rank under the model. Click one to see why."),
    scrollBox("worst", h("table", { class: "rx-table rx-worst" },
      h("thead", null, h("tr", null, ["user", "teacher score", "percentile", "rule score", "percentile"].map((c) => h("th", null, c)))),
      h("tbody", null, f.worst.map((u) => h("tr", { data: { user: u.id } },
        h("td", null, userLink({ id: u.id }, openUser, "worst")), h("td", { class: "rx-num" }, fmt(u.teacher, 3)),
        h("td", { class: "rx-num" }, fmt(u.teacher_pct, 3)), h("td", { class: "rx-num" }, points(u.student)),
        h("td", { class: "rx-num" }, fmt(u.student_pct, 3)))))))];
}

// Held-out fidelity per value of a categorical column the reader picks: where the summary is weak.
// Every column's slices come in the payload, so switching needs no kernel (the report shows it too).
function slicesView(slices) {
  if (!slices || !slices.length) return null;
  const table = (sl) => scrollBox("slices", h("table", { class: "rx-table rx-slices", data: { column: sl.column } },
    h("thead", null, h("tr", null, [sl.column, "held-out users", "share", "fidelity", "teacher mean"].map((c) => h("th", null, c)))),
    h("tbody", null, sl.rows.map((r) => h("tr", { class: r.fidelity !== null && r.fidelity < sl.fidelity_all - 0.05 ? "rx-slice-weak" : undefined,
      data: { value: r.value } },
    h("td", null, r.value), h("td", { class: "rx-num" }, fmt(r.n_users)), h("td", { class: "rx-num" }, pct(r.share, 0)),
    h("td", { class: "rx-num rx-slice-fidelity", title: r.fidelity === null ? `fewer than ${sl.min_users} users, or one teacher score among them: no figure` : undefined },
      r.fidelity === null ? "–" : fmt(r.fidelity, 3)),
    h("td", { class: "rx-num" }, fmt(r.teacher_mean, 3)))))));
  const holder = h("div", { class: "rx-slices-table" }, table(slices[0]));
  const pick = h("select", { class: "rx-slices-column", "aria-label": "slice the held-out users by" },
    slices.map((sl) => h("option", { value: sl.column }, sl.column)));
  pick.addEventListener("change", () => holder.replaceChildren(table(slices.find((sl) => sl.column === pick.value))));
  return [h("h4", null, "Fidelity by slice"),
    h("p", { class: "rx-help" }, `Held-out fidelity within each group of users (each user under their most common value of the column), against ${fmt(slices[0].fidelity_all, 3)} over all of them: `,
      "a group well below it (marked) is where the rules follow the model less well. No figure for a group of fewer than ",
      `${slices[0].min_users} users. exp.fidelity_by(column) gives the whole table.`),
    h("label", { class: "rx-slices-pick" }, "Slice by ", pick), holder];
}

function effectsView(results, openUser) {
  const curve = results.curve || [];
  const effects = results.effects || [];
  return h("section", { class: "rx-effects" },
    faithfulView(results.faithful, openUser),
    slicesView(results.slices),
    h("h4", null, "Fidelity against the number of rules"),
    curve.length ? [h("p", { class: "rx-help" }, "Each point is the rule set kept after pruning down to that many rules; ",
      "the rules shown are the large dot. exp.with_rules(k) gives the explanation at another point."), curveChart(curve)]
      : h("p", { class: "rx-help" }, "These rules were not pruned: there is one point only."),
    h("h4", null, "What each statistic does to the rule score"),
    h("p", { class: "rx-help" }, "The line is the sum of the weights of every rule condition on the statistic, as a step over its values, ",
      "with the other conditions at their most common value, relative to where most users are; bars beneath count users."),
    effects.map((e) => h("div", { class: "rx-effect-block", data: { column: e.column } },
      h("div", { class: "rx-threshold-title", title: e.notation }, withUnit(e)), chartBox(effectChart(e)),
      e.effect.every((v) => !v) ? h("div", { class: "rx-undefined-note" }, "No effect on its own: the rules that use it ",
        "also hold (or fail) through their other conditions at those conditions' most common values.") : null,
      e.n_undefined ? h("div", { class: "rx-undefined-note" },
        `${fmt(e.n_undefined)} ${e.undefined_words || "users for whom it is undefined"} count as below every threshold (the leftmost step).`) : null)));
}

// ------------------------------------------------------------------ statistics
function statisticsView(results) {
  return h("section", { class: "rx-statistics" }, scrollBox("statistics", h("table", { class: "rx-table rx-stat-table" },
    h("thead", null, h("tr", null, ["#", "statistic", "in plain words", "depth", "outputs"].map((c) => h("th", null, c)))),
    h("tbody", null, (results.statistics || []).map((s) => h("tr", { data: { statistic: s.index } },
      h("td", null, `S${s.index + 1}`), h("td", null, h("code", { class: "rx-code" }, s.text)),
      h("td", null, s.words), h("td", null, String(s.depth)), h("td", null, String(s.n_outputs))))))));
}

// ------------------------------------------------------------------ one user
function waterfall(d) {
  const steps = [{ label: "intercept", from: 0, to: d.intercept, kind: "base" }];
  let run = d.intercept;
  for (const c of d.contributions) {
    steps.push({ label: `rule ${c.index + 1}`, from: run, to: run + c.weight, kind: c.weight >= 0 ? "up" : "down", title: c.text });
    run += c.weight;
  }
  steps.push({ label: "rule score", from: 0, to: d.student, kind: "total" });
  // the rule-score axis only: the teacher's score is on another scale (a logit, a probability), so it
  // is compared by percentile on the strip beneath (percentileStrip), not drawn on this axis
  const vals = steps.flatMap((s) => [s.from, s.to]);
  const lo = Math.min(0, ...vals), hi = Math.max(0, ...vals);
  const W = 460, rowH = 20, L = 90, R = 60, T = 6;
  const H = T + rowH * steps.length + 8;
  const x = (v) => L + (W - L - R) * (v - lo) / (hi - lo || 1);
  const box = chartSvg("rx-waterfall", W, H, "rule score as intercept plus fired rules");
  box.appendChild(svg("line", { x1: x(0), x2: x(0), y1: T, y2: H - 4, class: "rx-zero" }));
  steps.forEach((s, i) => {
    const y0 = T + i * rowH;
    const a = Math.min(x(s.from), x(s.to)), b = Math.max(x(s.from), x(s.to));
    box.appendChild(svg("text", { x: L - 6, y: y0 + 14, "text-anchor": "end", class: "rx-axis" }, s.label));
    box.appendChild(svg("rect", { x: a, y: y0 + 3, width: Math.max(1, b - a), height: rowH - 6, class: `rx-wf rx-wf-${s.kind}` },
      s.title ? svg("title", null, s.title) : null));
    box.appendChild(svg("text", { x: b + 4, y: y0 + 14, class: "rx-axis" }, s.kind === "up" || s.kind === "down" ? signed(s.to - s.from) : points(s.to)));
  });
  return box;
}

// A percentile in words: an ordinal when it is whole ("22nd percentile"), else "percentile 3.2"
// ("3.22th" reads as a typo). Percentiles are mid-rank (rudi_explain/audit/ranks.py).
function percentileWords(p) {
  if (p === null || p === undefined || Number.isNaN(p)) return "percentile –";
  const r = Math.round(p * 10) / 10;
  return Number.isInteger(r) ? `${ordinal(r)} percentile` : `percentile ${r.toFixed(1)}`;
}

// The user's teacher percentile beside its rule-score percentile, on one 0-100 strip: the two scores
// live on different scales, their ranks among all users compare directly.
function percentileStrip(d) {
  const W = 460, H = 62, L = 90, R = 60, Y = 30;
  const box = chartSvg("rx-pct-strip", W, H, `percentile among all users: teacher ${percentileWords(d.percentile)}, ` +
    `rules ${percentileWords(d.student_percentile)}`);
  const x = (p) => L + (W - L - R) * Math.min(100, Math.max(0, p)) / 100;
  box.appendChild(svg("line", { x1: x(0), x2: x(100), y1: Y, y2: Y, class: "rx-pct-axis" }));
  for (const p of [0, 25, 50, 75, 100]) {
    box.appendChild(svg("line", { x1: x(p), x2: x(p), y1: Y - 3, y2: Y + 3, class: "rx-pct-axis" }));
  }
  box.appendChild(svg("text", { x: L - 6, y: Y + 4, "text-anchor": "end", class: "rx-axis" }, "percentile"));
  box.appendChild(svg("text", { x: x(0), y: Y + 15, "text-anchor": "middle", class: "rx-axis" }, "0"));
  box.appendChild(svg("text", { x: x(100), y: Y + 15, "text-anchor": "middle", class: "rx-axis" }, "100"));
  const mark = (p, cls, label, above) => {
    if (p === null || p === undefined) return;
    const px = x(p);
    box.appendChild(svg("line", { x1: px, x2: px, y1: above ? Y - 14 : Y, y2: above ? Y : Y + 14, class: `rx-pct-mark ${cls}-line`,
      "data-percentile": p }, svg("title", null, `${label}: ${percentileWords(p)}`)));
    const anchor = px < L + 30 ? "start" : px > W - R - 30 ? "end" : "middle";
    box.appendChild(svg("text", { x: px, y: above ? Y - 17 : Y + 26, "text-anchor": anchor, class: `rx-axis ${cls}-label` },
      `${label} ${fmt(Math.round(p * 10) / 10)}`));
  };
  mark(d.percentile, "rx-teacher", "teacher", true);
  mark(d.student_percentile, "rx-rules-pct", "rules", false);
  return box;
}

function userView(results, ui, openUser, redraw, audit, nav) {
  // data-lm-suppress-shortcuts: JupyterLab would take Enter (and other keys) typed here as notebook commands.
  const search = h("form", { class: "rx-user-search", "data-lm-suppress-shortcuts": "true", on: { submit: (e) => { e.preventDefault(); const v = ui.query.trim(); if (v) openUser(v); } } },
    h("input", { class: "rx-user-input", type: "search", placeholder: "user id", value: ui.query, "aria-label": "user id",
      data: { key: "user-input" },
      on: { input: (e) => { ui.query = e.target.value; },
        keydown: (e) => {  // Enter opens the user, also where the page would not submit the form
          if (e.key !== "Enter") return;
          e.preventDefault(); e.stopPropagation();
          const v = e.target.value.trim(); if (v) openUser(v);
        } } }),
    h("button", { class: "rx-button", type: "submit", data: { key: "user-show" } }, "Show"));
  const top = h("div", { class: "rx-top-users" }, h("span", { class: "rx-top-title" }, "Top-scored users: "),
    (results.top_users || []).map((u) => userLink(u, openUser, "top-user")));
  const parts = [search, top, userPicks(results.user_picks, ui, openUser, redraw)];
  if (ui.loading) parts.push(h("div", { class: "rx-loading" }, `Loading ${ui.userId}…`));
  else if (ui.userError) parts.push(h("div", { class: "rx-user-error" }, ui.userError));
  else if (ui.user) parts.push(userDetail(ui.user, results, ui, redraw, audit, nav));
  else parts.push(h("p", { class: "rx-help" }, "Pick a user: type an id, click one above, or click an example user on a rule card."));
  return h("section", { class: "rx-user-panel" }, parts);
}

// Users beyond the top 15 (payloads.user_picks): the lowest-scored, the user nearest a teacher percentile
// typed in, and seeded random users one after another. All are in the payload, so the standalone report
// picks them too (and says so when a picked user's drill-down is not embedded in it).
function userPicks(picks, ui, openUser, redraw) {
  if (!picks) return null;
  ui.pickPct ??= ""; ui.randomAt ??= 0;
  const byPct = picks.by_percentile || [], random = picks.random || [];
  const pickAt = () => {
    const p = Number(String(ui.pickPct).trim());
    if (String(ui.pickPct).trim() === "" || !Number.isFinite(p) || p < 0 || p > 100 || !byPct.length) {
      ui.pickNote = { id: null, text: "a percentile is a number from 0 to 100" }; redraw(); return;
    }
    const u = byPct[Math.round(p)];
    ui.pickNote = { id: u.id, text: `user ${u.id}: teacher score ${fmt(u.teacher, 3)}, ${percentileWords(u.percentile)} (the nearest to ${fmt(p, 3)})` };
    openUser(u.id);
  };
  // novalidate: the page says what is wrong with a percentile, where the browser would silently refuse to submit
  const pct = h("form", { class: "rx-pick-pct", "data-lm-suppress-shortcuts": "true", novalidate: true,
    on: { submit: (e) => { e.preventDefault(); pickAt(); } } },
  h("label", { class: "rx-top-title" }, "User at teacher percentile ",
    h("input", { class: "rx-pick-pct-input", type: "number", min: 0, max: 100, step: "any", value: ui.pickPct,
      "aria-label": "teacher percentile, 0 to 100", data: { key: "pick-pct" },
      on: { input: (e) => { ui.pickPct = e.target.value; },
        keydown: (e) => { if (e.key === "Enter") { swallow(e); pickAt(); } } } })),
  h("button", { class: "rx-button rx-pick-pct-show", type: "submit", data: { key: "pick-pct-show" } }, "Show"),
  // the note belongs to the user it picked (or to a wrong entry): gone once another user is opened
  ui.pickNote && (ui.pickNote.id === null || ui.pickNote.id === ui.userId)
    ? h("span", { class: "rx-pick-note", role: "status" }, ui.pickNote.text) : null);
  const rand = random.length ? h("button", { class: "rx-button rx-pick-random", type: "button", data: { key: "pick-random" },
    title: `one of ${random.length} users drawn at random (seeded: the same ones each time), in turn`,
    on: { click: (e) => { e.stopPropagation(); const u = random[ui.randomAt % random.length]; ui.randomAt += 1;
      ui.pickNote = null; openUser(u.id); } } }, ui.randomAt ? "Another random user" : "A random user") : null;
  return h("div", { class: "rx-user-picks" },
    (picks.bottom || []).length ? h("div", { class: "rx-bottom-users" }, h("span", { class: "rx-top-title" }, "Lowest-scored users: "),
      picks.bottom.map((u) => userLink(u, openUser, "bottom-user"))) : null,
    h("div", { class: "rx-pick-row" }, byPct.length ? pct : null, rand));
}

// A feed's marker: colour AND letter (A, B, ...). Ten fills cycle in order, so two feeds of
// one view share a fill only past ten, and the letter tells them apart there (and without colour).
const feedLabel = (j) => (j < 26 ? String.fromCharCode(65 + j) : String(j + 1));
const feedColor = (j) => `var(--rx-feed-${j % FEED_PALETTE})`;
const feedMark = (j) => h("span", { class: "rx-dot", style: `background:${feedColor(j)}`, data: { feedMark: feedLabel(j) } }, feedLabel(j));

function userDetail(d, results, ui, redraw, audit, nav) {
  const feeds = d.feeds || [];
  const ruleByIndex = new Map((results.rules || []).map((r) => [r.index, r]));
  const head = h("div", { class: "rx-user-head" },
    h("span", { class: "rx-user-title" }, "User ", h("span", { class: "rx-user-id" }, d.id)),
    d.held_out ? h("span", { class: "rx-tag" }, term("held out")) : h("span", { class: "rx-tag rx-tag-train" }, "training"));
  const scores = h("div", { class: "rx-figures" },
    h("div", { class: "rx-figure rx-figure-main" }, h("div", { class: "rx-figure-value rx-teacher-score" }, fmt(d.teacher, 4)),
      h("div", { class: "rx-figure-label" }, `teacher score, ${(results.summary || {}).score_unit || "raw"} (${percentileWords(d.percentile)})`)),
    h("div", { class: "rx-figure" }, h("div", { class: "rx-figure-value rx-rule-score" }, points(d.student)),
      h("div", { class: "rx-figure-label" }, d.student_percentile != null
        ? `rule score (${percentileWords(d.student_percentile)})` : "rule score")),
    h("div", { class: "rx-figure" }, h("div", { class: "rx-figure-value" }, `${d.fired.length} of ${ruleByIndex.size}`),
      h("div", { class: "rx-figure-label" }, "rules fire")));
  const fired = h("ol", { class: "rx-fired" }, d.contributions.map((c) => h("li", {
    class: "rx-fired-rule " + (c.weight >= 0 ? "rx-raises" : "rx-lowers"), data: { ruleIndex: c.index } },
  h("span", { class: "rx-weight" }, signed(c.weight)), ` rule ${c.index + 1}: `, h("span", { class: "rx-fired-text" }, c.text))));
  const lits = scrollBox("user-literals", h("table", { class: "rx-table rx-user-literals" },
    h("thead", null, h("tr", null, ["condition, as the rules write it", "this user's value", "holds?", "in fired rules"].map((c) => h("th", null, c)))),
    h("tbody", null, d.literals.map((l) => h("tr", { class: (l.holds ? "rx-holds" : "rx-fails") + (l.in_fired.length ? " rx-in-fired" : ""),
      data: { literal: l.literal, negated: String(!!l.negated) } },
    h("td", { title: l.notation || "" }, l.sentence || `${l.words} > ${l.threshold_text}`), h("td", { class: "rx-num" }, l.value_text ?? (l.value === null ? "undefined" : fmt(l.value))),
    h("td", null, l.holds ? "✓ yes" : "✗ no"), h("td", null, l.in_fired.map((k) => `rule ${k + 1}`).join(", ")))))));
  // Events, with a marker column per statistic output behind the fired rules.
  const feedSets = feeds.map((f) => new Set(f.rows));
  const active = ui.feed === null || ui.feed === undefined || ui.feed >= feeds.length ? null : ui.feed;
  const legend = h("div", { class: "rx-feed-legend" }, feeds.length ? "Rows feeding the statistics of the fired rules (click to pick one): " :
    "No fired rule uses a statistic of the events.",
  feeds.map((f, j) => h("button", { type: "button", class: "rx-feed-key" + (active === j ? " rx-active" : ""), title: f.text,
    style: `border-color:${feedColor(j)}`, data: { feed: j, key: `feed-${j}` }, "aria-pressed": String(active === j),
    on: { click: () => { ui.feed = active === j ? null : j; redraw(); } } },
  feedMark(j), ` ${f.words} = ${f.value_text ?? fmt(f.value)} (${f.rows.length} rows)`)));
  // The attribution strip, once asked for: one signed bar per row, beside the feed markers.
  const a = ui.attr && ui.attr.id === d.id && ui.attr.state && ui.attr.state.available ? ui.attr.state : null;
  const table = h("table", { class: "rx-table rx-events" + (a ? " rx-with-attr" : "") },
    h("thead", null, h("tr", null, h("th", null, "#"), feeds.map((f, j) => h("th", { title: f.words }, feedMark(j))),
      a ? h("th", { class: "rx-attr-head", title: "the model's attribution of each event: right (red) raises its score, left (green) lowers it" }, "model") : null,
      d.columns.map((c) => h("th", null, c)))),
    h("tbody", null, d.events.map((row, r) => {
      const feedsRow = feedSets.map((s) => s.has(r));
      const on = active === null ? feedsRow.some(Boolean) : feedsRow[active];
      return h("tr", { class: on ? "rx-feeds" : "", data: { row: r } },
        h("td", { class: "rx-num" }, String(r + 1)),
        feedsRow.map((x, j) => h("td", { class: "rx-feed-cell" }, x ? feedMark(j) : "")),
        a ? attrCell(a, r) : null,
        row.map((v) => h("td", { class: typeof v === "number" ? "rx-num" : "" }, v === null ? "" : typeof v === "number" ? fmt(v, 6) : v)));
    })));
  return h("div", { class: "rx-user", data: { user: d.id } }, head, scores,
    h("div", { class: "rx-user-grid" },
      h("div", null, h("h4", null, "Score, rule by rule"), chartBox(waterfall(d)), chartBox(percentileStrip(d))),
      h("div", null, h("h4", null, "Rules that fire"), d.contributions.length ? fired : h("p", null, "No rule fires: the score is the intercept."))),
    d.scorecard ? [h("h4", null, "On the scorecard: this user's band on each card"), userScorecard(d.scorecard)] : null,
    h("h4", null, "Conditions of the rules: does each hold for this user?"), lits,
    nav ? h("div", { class: "rx-to-hist" }, h("button", { class: "rx-button rx-user-histograms", type: "button", data: { key: "user-histograms" },
      on: { click: () => nav.toHistograms() } }, `Mark user ${d.id}'s values on the histograms`)) : null,
    ui.standalone ? null : [h("h4", { class: "rx-cf-title" }, `Smallest change that moves the rule score across the ${cfTarget(ui) === 50 ? "median" : percentileWords(cfTarget(ui))}`), counterfactualControls(d, ui, audit), counterfactualView(d, ui)],
    h("h4", null, `Events (${fmt(d.n_events)}${d.n_events > d.events.length ? `, first ${d.events.length} shown` : ""})`), legend,
    ui.standalone ? null : attributionPanel(d, ui, audit),
    scrollBox("events", table, "rx-events-wrap"));
}

// ------------------------------------------------------------------ audit: model attributions
const METHOD_LABEL = { integrated_gradients: "integrated gradients", ablation: "event ablation", occlusion: "event occlusion" };

function ordinal(p) {
  const k = Math.round(p);
  const s = k % 100 >= 10 && k % 100 <= 20 ? "th" : { 1: "st", 2: "nd", 3: "rd" }[k % 10] || "th";
  return `${k}${s}`;
}

// One row's cell of the strip: a bar from the middle, right for a positive attribution, left for a
// negative one, its length relative to the user's largest; the figure in the hover text and for
// screen readers. Rows the method did not attribute (events the model does not read) say so.
function attrCell(a, r) {
  const v = a.values[r];
  if (v === null || v === undefined) {
    return h("td", { class: "rx-attr-cell rx-attr-none", title: "not attributed: the model does not read this event, or the method left it out" },
      h("span", { "aria-hidden": "true" }, "·"), h("span", { class: "rx-sr" }, "not attributed"));
  }
  const parts = Object.entries(a.columns || {}).map(([c, vals]) => [c, vals[r]]).filter(([, x]) => x !== null && x !== undefined && x !== 0)
    .sort((p, q) => Math.abs(q[1]) - Math.abs(p[1])).slice(0, 3).map(([c, x]) => `${c} ${signed(x)}`);
  const width = a.max_abs ? Math.min(50, (50 * Math.abs(v)) / a.max_abs) : 0;
  const text = `model attribution ${signed(v)}${v > 0 ? ", raises its score" : v < 0 ? ", lowers its score" : ""}` +
    (parts.length ? ` (${parts.join(", ")})` : "") + (a.feeds[r] ? "; a fired rule reads this event" : "");
  return h("td", { class: "rx-attr-cell" + (a.feeds[r] ? " rx-attr-counted" : ""), title: text, data: { attribution: v } },
    h("span", { class: "rx-attr-track", "aria-hidden": "true" },
      h("span", { class: `rx-attr-bar ${v >= 0 ? "rx-attr-up" : "rx-attr-down"}`,
        style: `${v >= 0 ? "left" : "right"}:50%;width:${width.toFixed(1)}%` })),
    h("span", { class: "rx-sr" }, text));
}

// The shown rows the model attributed, first and last (null: none).
function attributedRows(a) {
  const rows = (a.values || []).map((v, r) => (v === null || v === undefined ? -1 : r)).filter((r) => r >= 0);
  return rows.length ? [rows[0], rows[rows.length - 1]] : null;
}

// Scroll the events box so that its first attributed row is the first below the header.
function toAttributed(root) {
  const box = root.querySelector(".rx-events-wrap");
  const row = box && box.querySelector("tr:has(> td.rx-attr-cell:not(.rx-attr-none))");
  if (!row) return;
  const head = box.querySelector("thead");
  box.scrollTop += row.getBoundingClientRect().top - box.getBoundingClientRect().top - (head ? head.offsetHeight : 0);
  box.scrollIntoView({ block: "nearest" });
}

function attributionPanel(d, ui, audit) {
  const a = ui.attr && ui.attr.id === d.id ? ui.attr : null;
  const button = h("button", { class: "rx-button rx-attr-button", type: "button", data: { key: "attributions" },
    disabled: !!(a && a.loading), on: { click: () => audit.attributions(d.id) } },
  a && a.loading ? "Asking the model…" : a && (a.state || a.error) ? "Ask the model again" : "Model attributions");
  const parts = [h("div", { class: "rx-attr-bar-line" }, button,
    !a ? h("span", { class: "rx-attr-help" }, " asks the model which of these events moved its score (one model call): ",
      "a signed bar per event row, beside the rows the fired rules read.") : null)];
  if (a && a.error) parts.push(h("div", { class: "rx-user-error rx-attr-error", role: "alert" }, a.error));
  else if (a && a.state && !a.state.available) {
    parts.push(h("div", { class: "rx-attr-unavailable", role: "note" }, h("strong", null, "No model attributions: "), a.state.reason));
  } else if (a && a.state) {
    const s = a.state;
    const method = METHOD_LABEL[s.method] || s.method;
    const uninformative = s.agreement !== null && s.informative === false;
    const sentence = s.agreement === null
      ? "Agreement is undefined: no fired rule reads an event of this user, or every attribution is 0."
      : uninformative
      ? `Not informative for this user: the fired rules read ${pct(s.event_share, 0)} of the events the model scored, so nearly all of its attribution (${method}) falls on them whatever it attends to.`
      : `${pct(s.agreement, 0)} of the model's attribution (${method}) falls on the events the fired rules read; ` +
        `those are ${pct(s.event_share, 0)} of the events it scored` +
        (s.lift !== null ? `: ${fmt(s.lift, 2)}× what an even spread would give.` : ".");
    parts.push(h("div", { class: "rx-attr-summary" },
      h("div", { class: "rx-figure rx-figure-main rx-attr-agreement" },
        h("div", { class: "rx-figure-value" }, s.agreement === null ? "–" : uninformative ? "not informative" : pct(s.agreement, 0)),
        h("div", { class: "rx-figure-label" }, "rule-model agreement")),
      h("div", { class: "rx-attr-text" }, h("div", { class: "rx-attr-sentence" }, sentence),
        h("div", { class: "rx-attr-key" }, h("span", { class: "rx-attr-swatch rx-attr-up" }), " raises the model's score ",
          h("span", { class: "rx-attr-swatch rx-attr-down" }), " lowers it · ",
          h("span", { class: "rx-attr-swatch rx-attr-counted-key" }), " an event a fired rule counts · ",
          `model score ${fmt(s.score, 4)}; bars relative to the largest, ${fmt(s.max_abs, 3)}`),
        attributedRows(s) ? h("div", { class: "rx-attr-rows" }, `The model attributed rows ${attributedRows(s)[0] + 1} to ${attributedRows(s)[1] + 1}. `,
          h("button", { class: "rx-button rx-attr-goto", type: "button", data: { key: "attr-goto" },
            on: { click: (e) => toAttributed(e.currentTarget.closest(".rx-user")) } }, "Show them in the table")) : null,
        s.note ? h("div", { class: "rx-attr-note", role: "note" }, s.note) : null)));
  }
  return h("div", { class: "rx-attr-panel", data: { user: d.id } }, parts);
}

// ------------------------------------------------------------------ audit: the counterfactual
const valueText = (v) => (v === null || v === undefined ? "undefined" : fmt(v, 4));

// The counterfactual's target and budget: the percentile to cross and the most conditions that may flip.
const cfTarget = (ui) => (ui.cfPercentile === undefined ? 50 : ui.cfPercentile);
const cfBudget = (ui) => (ui.cfMaxChanges === undefined ? 3 : ui.cfMaxChanges);
function counterfactualControls(d, ui, audit) {
  const pctInput = h("input", { class: "rx-cf-percentile", type: "number", min: "0", max: "100", step: "1",
    value: String(cfTarget(ui)), "aria-label": "target percentile of the rule scores" });
  const maxInput = h("select", { class: "rx-cf-max", "aria-label": "most conditions that may change" },
    [1, 2, 3, 4, 5].map((k) => h("option", { value: String(k), selected: k === cfBudget(ui) ? "" : undefined }, String(k))));
  maxInput.value = String(cfBudget(ui));
  const go = () => {
    const p = Number(pctInput.value);
    if (!pctInput.value.trim() || !Number.isFinite(p) || p < 0 || p > 100) { pctInput.setCustomValidity("a percentile from 0 to 100"); pctInput.reportValidity(); return; }
    pctInput.setCustomValidity("");
    ui.cfPercentile = p; ui.cfMaxChanges = Number(maxInput.value);
    audit.counterfactual(d.id);
  };
  pctInput.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
  return h("div", { class: "rx-cf-controls" },
    h("label", null, "Target percentile ", pctInput), " ",
    h("label", null, "at most ", maxInput, " changed conditions"), " ",
    h("button", { type: "button", class: "rx-button rx-cf-go", on: { click: go } }, "Search"));
}

function counterfactualView(d, ui) {
  const c = ui.cf && ui.cf.id === d.id ? ui.cf : null;
  if (!c || c.loading) return h("div", { class: "rx-cf rx-loading" }, "Searching the smallest change…");
  if (c.error) return h("div", { class: "rx-cf rx-cf-error", role: "note" }, c.error);
  const cf = c.data;
  const parts = [h("p", { class: "rx-cf-message" }, cf.message)];
  if (cf.changes.length) {  // found, or (not found) the change that gets nearest
    if (!cf.found) parts.push(h("p", { class: "rx-cf-nearest" }, h("strong", null, "Nearest reachable: "),
      `${points(cf.new_score)} (${percentileWords(cf.new_percentile)}), not past the target; the change that gets there:`));
    const inEvents = cf.changes.some((r) => r.events), onCards = cf.changes.some((r) => r.band_needed);
    parts.push(scrollBox("cf-changes", h("table", { class: "rx-table rx-cf-changes" },
      h("thead", null, h("tr", null, ["statistic", "now", "needed", "the condition it must meet", onCards ? "band on its card" : null,
        inEvents ? "in events" : null].filter(Boolean).map((x) => h("th", null, x)))),
      // the values as the payload writes them (a share as a percent, with the unit); an older reply: its numbers
      h("tbody", null, cf.changes.map((r) => h("tr", { data: { output: r.output } },
        h("td", { title: r.statistic }, r.words), h("td", { class: "rx-num" }, r.value_now_text ?? valueText(r.value_now)),
        h("td", { class: "rx-num rx-cf-needed" }, `→ ${r.value_needed_text ?? valueText(r.value_needed)}`), h("td", null, r.condition),
        onCards ? h("td", { class: "rx-cf-band" }, r.band_needed ? `${r.band_now} → ${r.band_needed}` : "–") : null,
        inEvents ? h("td", { class: "rx-cf-events" }, r.events || "–") : null))))));
    parts.push(h("div", { class: "rx-cf-flipped-title" }, `Conditions that flip (${cf.flipped.length}):`),
      h("ul", { class: "rx-cf-flipped" }, cf.flipped.map((f) => h("li", { data: { literal: f.literal } },
        h("span", { class: "rx-cf-now" }, f.now), h("span", { class: "rx-cf-arrow", "aria-label": "becomes" }, " → "),
        h("span", { class: "rx-cf-after" }, f.after),
        h("span", { class: "rx-cf-rules" }, ` (${f.rules.map((k) => `rule ${k + 1}`).join(", ")})`)))));
    parts.push(h("div", { class: "rx-cf-scores" }, `Rule score ${points(cf.score)} (${percentileWords(cf.percentile)}) → `,
      h("strong", null, `${points(cf.new_score)} (${percentileWords(cf.new_percentile)})`),
      `; the target: ${cf.direction} ${points(cf.target_score)}, ${percentileWords(cf.target_percentile)} of the training users' rule scores` + (cf.found ? "." : " (not reached).")));
  }
  const e = cf.edit;
  if (e) {
    parts.push(h("div", { class: "rx-cf-edit" }, h("strong", null, "On the events: "),
      `dropping the ${e.n_dropped} most recent matching event${e.n_dropped === 1 ? "" : "s"} gives the rule score ${points(e.score)} `,
      `(${percentileWords(e.percentile)}), ${e.reaches_target ? "past" : "not past"} the target.`,
      e.teacher_score !== null
        ? h("div", { class: "rx-cf-teacher" }, `The model on the edited events: ${fmt(e.teacher_score_before, 4)} `,
          `(${percentileWords(e.teacher_percentile_before)}) → `, h("strong", null, `${fmt(e.teacher_score, 4)} (${percentileWords(e.teacher_percentile)})`), ".")
        : e.note ? h("div", { class: "rx-cf-teacher rx-muted" }, e.note) : null));
  }
  return h("div", { class: "rx-cf", data: { direction: cf.direction } }, parts);
}

// ------------------------------------------------------------------ audit: what-if thresholds
// The result box of one literal's what-if, from its state in ui.whatIf (none: the figures as explained).
function whatIfResult(th, st, results) {
  const sm = results.summary || {};
  if (!st || (!st.state && !st.error)) {
    return [h("span", { class: "rx-whatif-fid", data: { fidelity: sm.fidelity_test } }, `held-out fidelity ${fmt(sm.fidelity_test, 3)}`),
      st && st.loading ? " · computing…" : " as explained; type a threshold to see what moving it does."];
  }
  if (st.error) return h("span", { class: "rx-user-error rx-whatif-error" }, st.error);
  const w = st.state;
  const diff = (w.fidelity_test_moved ?? 0) - (w.fidelity_test ?? 0);
  const change = Math.abs(diff) < 5e-4 ? "rx-same" : diff > 0 ? "rx-better" : "rx-worse";
  return [
    h("div", { class: "rx-whatif-head" },
      h("span", { class: "rx-whatif-fid", data: { fidelity: w.fidelity_test_moved, before: w.fidelity_test } },
        `held-out fidelity ${fmt(w.fidelity_test, 3)} → `, h("strong", { class: `rx-whatif-after ${change}` }, fmt(w.fidelity_test_moved, 3)),
        ` (${diff >= 0 ? "+" : "-"}${fmt(Math.abs(diff), 2)})`),
      h("span", { class: "rx-whatif-train" }, ` · training ${fmt(w.fidelity_train, 3)} → ${fmt(w.fidelity_train_moved, 3)}`),
      st.loading ? h("span", { class: "rx-muted" }, " · computing…") : null),
    h("div", { class: "rx-whatif-line" }, `At more than ${w.value_shown ?? w.value_text}: users above ${pct(w.share_above.train)} → ${pct(w.share_above.train_moved)} (training); `,
      `rule scores change for ${fmt(w.n_changed)} users.`),
    h("ul", { class: "rx-whatif-rules" }, w.rules.map((r) => h("li", { data: { ruleIndex: r.index } },
      h("span", { class: "rx-weight " + (r.weight >= 0 ? "rx-up-text" : "rx-down-text") }, signed(r.weight)),
      ` rule ${r.index + 1} fires for ${pct(r.coverage_train)} → `, h("strong", { class: "rx-whatif-coverage" }, pct(r.coverage_train_moved)),
      ` of training users (${pct(r.coverage_test)} → ${pct(r.coverage_test_moved)} held out)`,
      r.can_fire ? null : h("strong", { class: "rx-user-error" }, ": it fires for no one")))),
    (w.warnings || []).length ? h("div", { class: "rx-whatif-warning", role: "note" }, w.warnings.join("; ")) : null,
    h("div", { class: "rx-whatif-code" }, "In code: ", h("code", { class: "rx-code" }, `exp.with_threshold(${w.literal}, ${w.value_text})`)),
  ];
}

// The decimals a slid value keeps: those of the literal's own threshold text, or enough to tell two
// slider steps apart, whichever is more (a slider gives 0.254285905; exp.with_threshold wants 0.2543).
function slideDecimals(thresholdText, step) {
  const own = (String(thresholdText).split(".")[1] || "").length;
  return Math.min(12, Math.max(own, step > 0 ? Math.ceil(-Math.log10(step)) + 1 : 0));
}

// The number in a what-if box as typed: "25%", "1,200 EUR" and " 25 " read 25, 1200 and 25 (the kernel
// reads the text itself, exactly: rudi_explain/audit/cards.py read_value; this is for the chart's line).
function boxNumber(text) {
  const s = String(text).trim().replace(/%$/, "").replace(/\s+\D*$/, "").replace(/[,\u2009 ]/g, "");
  return s ? Number(s) : NaN;
}

// One what-if control per statistic output: the threshold to move is picked among its literals in
// rules (sorted by value), so an output read at four thresholds shows one control, not four alike.
function whatIfControl(t, ui, results, audit, redraw) {
  const inRules = byThreshold(t.thresholds).filter((x) => x.in_rules);
  if (!inRules.length) return null;
  const picked = inRules.find((x) => x.literal === (ui.whatIfPick || {})[t.column]) || inRules[0];
  const th = picked, i = th.literal;
  const st = ui.whatIf[i];
  // the box and its slider take the value the way the card writes it: a share in percent (x input_scale)
  const scale = t.input_scale || 1, own = th.input_text ?? th.threshold_text;
  const text = st ? st.text : own;
  const lo = (t.min ?? th.threshold) * scale, hi = (t.max ?? th.threshold) * scale;
  const step = t.discrete ? 1 : (hi - lo) / 200 || 1;
  const decimals = slideDecimals(own, step);
  const stop = (e) => e.stopPropagation();  // no notebook shortcut while typing or sliding here
  const onKey = (e) => {
    if (e.key === "Enter") { swallow(e); audit.whatIfTyped(i, e.target.value, true); }
    else if (e.key === "Escape") { swallow(e); audit.whatIfReset(i, own); }
    else stop(e);
  };
  const label = `new threshold for: ${literalWords(t, th)}`;
  const which = inRules.length > 1
    ? h("select", { class: "rx-whatif-pick", "aria-label": `the threshold of ${t.words} to move`, data: { key: `whatif-pick-${t.column}` },
      on: { change: (e) => { (ui.whatIfPick ||= {})[t.column] = Number(e.target.value); redraw(); }, keydown: stop } },
    inRules.map((x) => h("option", { value: String(x.literal), selected: x.literal === i }, `> ${x.value_text ?? x.threshold_text}`)))
    : h("span", { class: "rx-whatif-words" }, `> ${th.value_text ?? th.threshold_text}`);
  return h("div", { class: "rx-whatif" + (st && st.state ? " rx-whatif-moved" : ""), data: { literal: i, column: t.column }, "data-lm-suppress-shortcuts": "true" },
    h("div", { class: "rx-whatif-controls" },
      h("span", { class: "rx-whatif-label", title: literalWords(t, th) }, "What if ", which, " were more than"),
      // text, not type=number: "25%" is a share typed the way its card writes it
      h("input", { class: "rx-whatif-input", type: "text", inputmode: "decimal", value: text, "aria-label": label,
        data: { key: `whatif-${i}`, literal: i }, on: { input: (e) => audit.whatIfTyped(i, e.target.value, false), keydown: onKey } }),
      scale === 100 ? h("span", { class: "rx-whatif-unit rx-muted" }, "% (25 is 25%)")
        : t.unit ? h("span", { class: "rx-whatif-unit rx-muted" }, t.unit) : null,
      hi > lo ? h("input", { class: "rx-whatif-range", type: "range", min: lo, max: hi, step, value: boxNumber(text),
        "aria-label": `${label} (slider from ${t.min_text ?? fmt(lo)} to ${t.max_text ?? fmt(hi)})`, data: { key: `whatif-range-${i}`, literal: i },
        on: { input: (e) => audit.whatIfTyped(i, String(Number(Number(e.target.value).toFixed(decimals))), false, true), keydown: onKey } }) : null,
      h("button", { class: "rx-button rx-whatif-reset", type: "button", data: { key: `whatif-reset-${i}` },
        on: { click: () => audit.whatIfReset(i, own) } }, "Reset")),
    h("div", { class: "rx-whatif-result", role: "status", "aria-live": "polite", data: { literal: i } }, whatIfResult(th, st, results)));
}

// A live widget hides the static copy shown just before it (rudi_explain/static_view.py): that copy
// is for where no kernel draws the widget (nbconvert, GitHub), and stays visible there. The view may
// be attached to its output area after render, so look again a few times.
function hideStaticCopy(el, tries = 30) {
  const out = el.closest(".jp-OutputArea-child, .output_area");
  const prev = out && out.previousElementSibling;
  if (prev && prev.querySelector(".rudi-explain-static")) prev.style.display = "none";
  else if (!el.isConnected && tries > 0) setTimeout(() => hideStaticCopy(el, tries - 1), 100);
}

// ------------------------------------------------------------------ redraws keep focus and scroll
// Every change redraws the view from scratch, which drops the focused element and the scroll
// offsets of inner boxes. Focusable elements carry a stable data-key (and scrolled boxes a
// data-scroll-key), so the new element of the same key gets them back.
function viewState(root) {
  const active = root.contains(document.activeElement) ? document.activeElement : null;
  const keyed = active && active.closest("[data-key]");
  const scroll = new Map([...root.querySelectorAll("[data-scroll-key]")]
    .map((b) => [b.dataset.scrollKey, [b.scrollLeft, b.scrollTop]]));
  const text = active && typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
  return { hadFocus: !!active, key: keyed ? keyed.dataset.key : null, text, scroll };
}

function restoreView(root, state) {
  for (const b of root.querySelectorAll("[data-scroll-key]")) {
    const at = state.scroll.get(b.dataset.scrollKey);
    if (at) [b.scrollLeft, b.scrollTop] = at;
  }
  if (!state.hadFocus) return;
  const byKey = (k) => [...root.querySelectorAll("[data-key]")].find((n) => n.dataset.key === k);  // keys hold user ids: no selector
  // Gone (a user link that opened the User tab): the selected tab, so focus stays in the widget.
  const target = (state.key && byKey(state.key)) || root.querySelector(".rx-tab[aria-selected='true']") || null;
  if (!target) return;
  target.focus({ preventScroll: true });
  if (state.text && typeof target.setSelectionRange === "function") target.setSelectionRange(...state.text);
}

// The tab bar as WAI-ARIA tabs: one tab in the Tab order (roving tabindex), arrows, Home and End
// move the selection and focus with it, the panel is a tabpanel labelled by its tab.
function tabBar(tabs, ui, ids, select) {
  const keys = tabs.map(([k]) => k);
  const onKey = (e) => {
    const i = keys.indexOf(ui.tab), n = keys.length;
    const to = { ArrowRight: (i + 1) % n, ArrowLeft: (i - 1 + n) % n, Home: 0, End: n - 1 }[e.key];
    if (to === undefined) return;
    swallow(e);
    select(keys[to]);
  };
  ui.tabKey = onKey;  // also called from the view's window listener (render), ahead of Lumino's shortcuts
  return h("div", { class: "rx-tabs", role: "tablist", "aria-label": "explanation views" },
    tabs.map(([k, label]) => h("button", {
      class: "rx-tab" + (ui.tab === k ? " rx-active" : ""), type: "button", role: "tab", id: ids.tab(k),
      "aria-controls": ids.panel, "aria-selected": String(ui.tab === k), tabindex: ui.tab === k ? "0" : "-1",
      data: { tab: k, key: `tab-${k}` }, on: { click: () => select(k), keydown: onKey } }, label)));
}

// A view with no kernel behind it (restored from a saved notebook's widget state, an nbconvert page,
// or the kernel stopped or restarted) would wait for ever for an answer. ipywidgets marks such a
// view's element "jupyter-widgets-disconnected" (its model's comm is not live), from before render
// and on every change; the standalone report's element never has the class (its shim answers).
const NO_KERNEL = "needs the running kernel: re-run the cell";
const kernelGone = (el) => !!el.closest(".jupyter-widgets-disconnected");

let VIEWS = 0;  // ids must differ between views of one page (a widget shown twice, two widgets)

// ------------------------------------------------------------------ the widget
// A value the payload shortened ("abc…xyz") opens whole on a click: the payloads' full_values map each
// shortened form to the value it stands for (rudi_explain/views/text.py), or to null where the form is
// ambiguous or the payload's budget was spent. Text in charts (SVG), buttons and inputs is left as it is.
const FULL_NOTE = "The whole value is not in this view (two values shorten alike, or there are too many long values): exp.rules and exp.user(id).events hold it in Python.";
function linkFullValues(root, full) {
  const forms = Object.keys(full || {}).filter((k) => k.includes("\u2026")).sort((a, b) => b.length - a.length);
  if (!forms.length) return;
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const todo = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeValue.includes("\u2026") && !n.parentElement.closest("svg, button, option, select, textarea, .rx-full-value")) todo.push(n);
  }
  while (todo.length) {
    const node = todo.pop();
    const text = node.nodeValue;
    const form = forms.find((k) => text.includes(k));
    if (!form) continue;
    const at = text.indexOf(form);
    const whole = full[form];
    const box = h("span", { class: "rx-full-value" }, whole == null ? FULL_NOTE : whole);
    box.hidden = true;
    const open = h("button", { type: "button", class: "rx-full", title: "Show the whole value", "aria-expanded": "false" }, form);
    open.addEventListener("click", (e) => {
      e.stopPropagation();  // a row or card around it keeps its own click
      box.hidden = !box.hidden;
      open.setAttribute("aria-expanded", String(!box.hidden));
    });
    const rest = document.createTextNode(text.slice(at + form.length));
    node.nodeValue = text.slice(0, at);
    node.after(open, box, rest);
    todo.push(rest);  // another shortened value may follow in the same text
  }
}

function render({ model, el }) {
  hideStaticCopy(el);
  const ui = { tab: "scorecard", openRule: null, query: "", userId: "", user: null, userError: "", loading: false,
    ruleSort: "weight", ruleFilter: "", compact: false, statTarget: null, fromRule: null, markUser: false, printAll: false,
    exportNote: "", reportRequest: 0,
    request: 0, feed: null, cancelling: false, allThresholds: false,
    attr: null, cf: null, whatIf: {}, seq: 0, agree: null };  // the audit views: attributions, counterfactual, what-if per literal
  // The standalone report (rudi_explain/views/report.py) has no model behind it: the views that only
  // ask the model (agreement, attributions, counterfactual, what-if) are left out there, not shown to
  // answer "no kernel". A notebook's widget has no such field.
  ui.standalone = !!model.get("standalone");
  const whatIfTimers = {};
  const root = h("div", { class: "rx-root" });
  el.appendChild(root);
  const prefix = `rx-${++VIEWS}-${Math.random().toString(36).slice(2, 7)}`;
  const ids = { tab: (k) => `${prefix}-tab-${k}`, panel: `${prefix}-panel` };
  const select = (k) => {  // the focus follows the selected tab through the redraw (its data-key)
    ui.tab = k;
    const tab = root.querySelector(`.rx-tab[data-tab="${k}"]`);
    if (tab) tab.focus({ preventScroll: true });
    draw();
  };

  // Every request to the kernel goes through here: without a kernel it is refused, not sent into the void.
  const ask = (msg) => {
    if (kernelGone(el)) { ui.noKernel = true; return false; }
    ui.noKernel = false;  // the kernel is back (reconnected): the note goes with the next redraw
    model.send(msg);
    return true;
  };
  ui.ask = ask;

  const openUser = (id) => {
    ui.tab = "user"; ui.loading = true; ui.userError = ""; ui.userId = String(id); ui.query = String(id);
    ui.request += 1; ui.feed = null; ui.attr = null; ui.cf = null;
    if (!ask({ type: "user", id: String(id), request: ui.request })) {
      ui.loading = false; ui.userError = `The drill-down into a user ${NO_KERNEL}.`;
    }
    draw();
  };

  // The audit requests. Each answer carries its request number: a late answer to an older request is dropped.
  const byData = (cls, key, value) => [...root.querySelectorAll(cls)].filter((n) => n.dataset[key] === String(value));
  const audit = {
    agreement() {  // the Summary's agreement on held-out users: asks the model, only when the button is pressed
      ui.agree = { request: ++ui.seq, loading: true, state: null, error: "", done: 0, of: 0 };
      if (!ask({ type: "agreement", request: ui.agree.request })) Object.assign(ui.agree, { loading: false, error: `The rule-model agreement ${NO_KERNEL}.` });
      draw();
    },
    attributions(id) {  // asks the model: only when the button is pressed
      ui.attr = { id, request: ++ui.seq, loading: true, state: null, error: "" };
      if (!ask({ type: "attributions", id, request: ui.attr.request })) Object.assign(ui.attr, { loading: false, error: `Model attributions ${NO_KERNEL}.` });
      draw();
    },
    counterfactual(id) {
      ui.cf = { id, request: ++ui.seq, loading: true, data: null, error: "" };
      if (!ask({ type: "counterfactual", id, request: ui.cf.request, percentile: cfTarget(ui), max_literals: cfBudget(ui) })) Object.assign(ui.cf, { loading: false, error: `The counterfactual ${NO_KERNEL}.` });
      draw();
    },
    // A typed (or slid) threshold: the histogram's line moves at once, the figures follow the kernel's answer.
    whatIfTyped(i, text, now, fromRange = false) {
      const st = ui.whatIf[i] || (ui.whatIf[i] = { text, request: 0, state: null, error: "", loading: false });
      st.text = String(text);
      for (const n of byData(fromRange ? ".rx-whatif-input" : ".rx-whatif-range", "literal", i)) n.value = st.text;
      clearTimeout(whatIfTimers[i]);
      const t = ((model.get("results") || {}).thresholds || []).find((x) => x.thresholds.some((y) => y.literal === i));
      const scale = (t && t.input_scale) || 1;
      const n = boxNumber(st.text);
      if (!Number.isFinite(n)) {
        st.error = scale === 100 ? "type a percent (25 is 25%)" : "type a number"; st.loading = false; this.whatIfShow(i); return;
      }
      const v = n / scale;
      this.whatIfLine(i, v);
      const send = () => {
        st.request = ++ui.seq; st.loading = true; st.error = "";
        // the text goes as typed: the kernel reads it exactly (10.8 -> 0.108, not 10.8 / 100)
        if (!ask({ type: "what_if", literal: i, value: v, text: st.text, request: st.request })) Object.assign(st, { loading: false, error: `a what-if ${NO_KERNEL}` });
        this.whatIfShow(i);
      };
      if (now) send(); else whatIfTimers[i] = setTimeout(send, 150);
    },
    whatIfReset(i, text) {
      clearTimeout(whatIfTimers[i]);
      delete ui.whatIf[i];
      for (const n of byData(".rx-whatif-input, .rx-whatif-range", "literal", i)) n.value = text;
      this.whatIfLine(i, null);
      this.whatIfShow(i);
    },
    whatIfLine(i, v) {
      for (const line of root.querySelectorAll("line.rx-hist-proposed")) {
        if (line.dataset.literal !== String(i)) continue;
        const x = line.ownerSVGElement && line.ownerSVGElement.rxScale;
        if (v === null || !x) { line.setAttribute("visibility", "hidden"); continue; }
        line.setAttribute("x1", x(v)); line.setAttribute("x2", x(v)); line.setAttribute("visibility", "visible");
      }
    },
    // Only the result box is replaced: a redraw would move the caret of the input being typed in.
    whatIfShow(i) {
      const results = model.get("results") || {};
      const th = (results.thresholds || []).flatMap((t) => t.thresholds).find((x) => x.literal === i);
      for (const box of byData(".rx-whatif-result", "literal", i)) {
        box.replaceChildren(...[whatIfResult(th, ui.whatIf[i], results)].flat(Infinity).filter((c) => c !== null && c !== undefined)
          .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
        box.closest(".rx-whatif").classList.toggle("rx-whatif-moved", !!(ui.whatIf[i] && ui.whatIf[i].state));
      }
    },
  };

  // Links between the tabs: a rule's statistic to its histogram and back, a user to the histograms and back.
  // The target is focused and scrolled to after the redraw, so keyboard users land where they went.
  const focusKey = (key) => {
    const n = [...root.querySelectorAll("[data-key]")].find((x) => x.dataset.key === key);
    if (n) { n.focus({ preventScroll: true }); n.scrollIntoView({ block: "nearest" }); }
  };
  const nav = {
    toStatistic(column, fromRule) {
      const shown = (model.get("results") || {}).thresholds || [];
      const t = shown.find((x) => x.column === column);
      if (t && !t.thresholds.some((th) => th.in_rules)) ui.allThresholds = true;
      ui.tab = "thresholds"; ui.statTarget = column; ui.fromRule = fromRule;
      draw(); focusKey(`stat-${column}`);
    },
    toRule(index) {
      ui.tab = "rules"; ui.openRule = index; ui.compact = false;
      const card = ((model.get("results") || {}).rules || []).find((c) => c.index === index);
      if (card && !sortedRules([card], ui).length) ui.ruleFilter = "";  // the filter would hide it
      draw(); focusKey(`rule-${index}`);
    },
    toHistograms() { ui.markUser = true; ui.tab = "thresholds"; ui.statTarget = null; draw(); focusKey("user-mark-back"); },
    toUser() { ui.tab = "user"; draw(); focusKey("tab-user"); },
  };

  // Export: the rules as CSV and JSON and a chart as SVG from the page's own data; the report from the
  // kernel (the standalone report answers with its own page).
  const stamp = () => new Date().toISOString().slice(0, 19).replace(/[:T]/g, "-");
  const exporter = {
    csv() { download(`rules-${stamp()}.csv`, "text/csv;charset=utf-8", rulesCsv((model.get("results") || {}).rules || [])); },
    json() {
      const r = model.get("results") || {};
      download(`rules-${stamp()}.json`, "application/json", JSON.stringify({ summary: r.summary, audit: r.audit, rules: r.rules }, null, 1));
    },
    svg() {
      const chart = root.querySelector(".rx-panel svg.rx-svg");
      if (!chart) { ui.exportNote = "No chart in this tab: open Faithfulness or Thresholds."; draw(); return; }
      const name = (chart.getAttribute("class") || "chart").split(" ").find((c) => c !== "rx-svg") || "chart";
      download(`${name.replace(/^rx-/, "")}-${stamp()}.svg`, "image/svg+xml", svgFile(chart));
      ui.exportNote = `Saved the first chart of this tab (${chart.getAttribute("aria-label")}).`; draw();
    },
    report() {
      ui.reportRequest = ++ui.seq;
      ui.exportNote = "Writing the report…";
      if (!ask({ type: "report", request: ui.reportRequest })) ui.exportNote = `The report ${NO_KERNEL} (or use exp.to_html).`;
      draw();
    },
  };

  function exportBar() {
    const b = (key, label, fn, title) => h("button", { class: `rx-button rx-export-${key}`, type: "button", data: { key: `export-${key}` }, title,
      on: { click: fn } }, label);
    return h("div", { class: "rx-export", role: "group", "aria-label": "download" }, h("span", { class: "rx-export-title" }, "Download: "),
      b("csv", "Rules (CSV)", () => exporter.csv(), "every rule, one row each: weight, text, coverage, score gap"),
      b("json", "Rules (JSON)", () => exporter.json(), "the rules as the widget has them, with the summary and the audit header"),
      b("report", "Report (HTML)", () => exporter.report(), "the standalone report: one file, opens offline"),
      b("svg", "Chart (SVG)", () => exporter.svg(), "the first chart of the open tab"),
      ui.exportNote ? h("span", { class: "rx-export-note", role: "status" }, ` ${ui.exportNote}`) : null);
  }

  function panelOf(k, results) {
    if (k === "scorecard") return scorecardView(results);
    if (k === "rules") return rulesView(results, ui, openUser, draw, nav);
    if (k === "effects") return effectsView(results, openUser);
    if (k === "thresholds") return thresholdsView(results, ui, draw, audit, nav);
    if (k === "user") return userView(results, ui, openUser, draw, audit, nav);
    return statisticsView(results);
  }

  function draw() {
    const status = model.get("status");
    const results = model.get("results") || {};
    const error = model.get("error");
    const parts = [h("div", { class: "rx-header" }, h("span", { class: "rx-title" }, "rudi-explain"),
      h("span", { class: `rx-status rx-status-${status}` }, status))];
    if (ui.noKernel) parts.push(h("div", { class: "rx-message rx-no-kernel", role: "status" }, `No kernel behind this view (a saved notebook, or the kernel stopped): it shows what was saved, and what asks the kernel ${NO_KERNEL}.`));
    const hasResults = status === "done" && results.summary;
    if (!hasResults) parts.push(progressView(model, ui, draw));
    if (status === "failed" && error) parts.push(h("div", { class: "rx-error", role: "alert" }, h("strong", null, "Failed: "), error));
    if (hasResults) {
      parts.push(summaryView(results.summary));
      const pruning = pruningLine(results, ui);
      if (pruning) parts.push(pruning);  // replaceChildren would write a null as the text "null"
      parts.push(importanceView(results.importance));
      if (!ui.standalone) parts.push(agreementPanel(ui, audit));
      const tabs = [["scorecard", "Scorecard"], ["rules", `Rules (${results.rules.length})`], ["effects", "Faithfulness"], ["thresholds", "Thresholds"], ["user", "User"], ["statistics", `Statistics (${results.statistics.length})`]];
      if (!results.scorecard) {  // a rule list (or a payload saved before the scorecard): no Scorecard tab
        tabs.shift();
        if (ui.tab === "scorecard") ui.tab = "rules";
      }
      parts.push(exportBar());
      parts.push(tabBar(tabs, ui, ids, select));
      if (ui.printAll) {  // printing: every tab's contents, one after the other, each under its name
        for (const [k, label] of tabs) {
          parts.push(h("div", { class: "rx-panel rx-print-panel", data: { tab: k } }, h("h3", { class: "rx-print-title" }, label), panelOf(k, results)));
        }
      } else {
        parts.push(h("div", { class: "rx-panel", data: { tab: ui.tab, key: "panel" }, role: "tabpanel", id: ids.panel,
          "aria-labelledby": ids.tab(ui.tab), tabindex: "0" }, panelOf(ui.tab, results)));
      }
    }
    const state = viewState(root);
    root.replaceChildren(...parts);
    linkFullValues(root, { ...(results.full_values || {}), ...((ui.user && ui.user.full_values) || {}) });
    restoreView(root, state);
  }

  const onMsg = (msg) => {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "user" && msg.request === ui.request) {
      ui.loading = false;
      if (msg.ok) { ui.user = msg.detail; ui.userError = ""; } else { ui.user = null; ui.userError = msg.error || "no such user"; }
      if (msg.ok && !ui.standalone) audit.counterfactual(msg.detail.id);  // cheap (no model call unless events are edited): asked at once
      draw();
    } else if (msg.type === "agreement_progress" && ui.agree && ui.agree.loading && msg.request === ui.agree.request) {
      ui.agree.done = msg.done; ui.agree.of = msg.of;
      draw();
    } else if (msg.type === "agreement" && ui.agree && msg.request === ui.agree.request) {
      ui.agree.loading = false;
      if (msg.ok) ui.agree.state = msg.state; else ui.agree.error = msg.error || "the model could not be asked";
      draw();
    } else if (msg.type === "attributions" && ui.attr && msg.request === ui.attr.request) {
      ui.attr.loading = false;
      if (msg.ok) ui.attr.state = msg.state; else ui.attr.error = msg.error || "the model could not be asked";
      draw();
      if (msg.ok) toAttributed(root);  // a model reading the last 64 events: their rows may be far down the table
    } else if (msg.type === "counterfactual" && ui.cf && msg.request === ui.cf.request) {
      ui.cf.loading = false;
      if (msg.ok) ui.cf.data = msg.counterfactual; else ui.cf.error = msg.error || "no counterfactual";
      draw();
    } else if (msg.type === "report" && msg.request === ui.reportRequest) {
      if (msg.ok) {
        download(`rudi-explain-report-${stamp()}.html`, "text/html;charset=utf-8", msg.html);
        ui.exportNote = "Report saved.";
      } else ui.exportNote = `No report: ${msg.error || "it could not be written"}`;
      draw();
    } else if (msg.type === "with_rules") {
      ui.withRulesError = msg.ok ? "" : msg.error || "could not show that rule set";
      draw();
    } else if (msg.type === "what_if") {
      const st = ui.whatIf[msg.literal];
      if (!st || msg.request !== st.request) return;
      st.loading = false;
      if (msg.ok) { st.state = msg.state; st.error = ""; } else { st.state = null; st.error = msg.error || "could not move the threshold"; }
      audit.whatIfShow(msg.literal);
    }
  };
  const events = ["change:status", "change:progress", "change:chart", "change:results", "change:error"];
  for (const ev of events) model.on(ev, draw);
  model.on("msg:custom", onMsg);
  // Arrows, Home and End on a tab belong to the tabs (WAI-ARIA). Notebook 7 binds ArrowLeft/Right in
  // command mode to notebook commands, which Lumino runs from its document capture listener, before the
  // tab sees the key. A window capture listener runs first and takes only those keys on this view's tabs.
  const onWindowKey = (e) => {
    const tab = e.target instanceof Element ? e.target.closest(".rx-tab") : null;
    if (tab && root.contains(tab) && ui.tabKey) ui.tabKey(e);
  };
  window.addEventListener("keydown", onWindowKey, true);
  // Printing shows every tab, expanded (with the @media print rules in the CSS); the view comes back after.
  const beforePrint = () => { ui.printAll = true; draw(); };
  const afterPrint = () => { ui.printAll = false; draw(); };
  window.addEventListener("beforeprint", beforePrint);
  window.addEventListener("afterprint", afterPrint);
  draw();
  return () => {
    window.removeEventListener("beforeprint", beforePrint);
    window.removeEventListener("afterprint", afterPrint);
    for (const ev of events) model.off(ev, draw);
    model.off("msg:custom", onMsg);
    window.removeEventListener("keydown", onWindowKey, true);
  };
}

export default { render };
