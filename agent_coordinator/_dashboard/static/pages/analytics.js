// "/analytics": `agentshape analytics`'s review of this service's runs, as inline SVG charts.
import { api, el, ms, setTitle } from "../app.js";

const NS = "http://www.w3.org/2000/svg";
const GREEN = "#2f9e44";
const RED = "#c92a2a";
const ORANGE = "#e67700";
const NARROW = new Set([3, 5, 6, 7, 8]); // table columns hidden on a narrow screen

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function percent(value) {
  return value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`;
}

function short(text, limit = 20) {
  return text.length > limit ? `${text.slice(0, limit - 1)}…` : text;
}

// Horizontal bars: [label, value, colour, note]; value between 0 and max.
function bars(title, items, max, format) {
  const row = 26;
  const height = 30 + items.length * row;
  const chart = svg("svg", { viewBox: `0 0 460 ${height}`, class: "chart", role: "img", "aria-label": title });
  chart.append(svg("text", { x: 8, y: 18, "font-weight": 600 }, title));
  items.forEach(([label, value, colour], i) => {
    const y = 30 + i * row;
    const width = max > 0 ? Math.max(0, (value / max) * 240) : 0;
    chart.append(
      svg("text", { x: 8, y: y + 15 }, short(label, 18)),
      svg("rect", { x: 140, y: y + 3, width: 240, height: 16, fill: "#eef1f5" }),
      svg("rect", { x: 140, y: y + 3, width, height: 16, fill: colour }),
      svg("text", { x: 388, y: y + 15 }, format(value)),
    );
  });
  return chart;
}

// Stacked columns per day: completed (green) under failed (red).
function days(trend) {
  const width = 460;
  const height = 190;
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, class: "chart", role: "img", "aria-label": "Runs per day" });
  chart.append(svg("text", { x: 8, y: 18, "font-weight": 600 }, "Runs per day (completed, failed)"));
  const peak = Math.max(1, ...trend.map((d) => d.completed + d.failed));
  const slot = (width - 60) / Math.max(trend.length, 1);
  const bottom = height - 24;
  const scale = (bottom - 34) / peak;
  chart.append(svg("text", { x: 8, y: 40 }, String(peak)), svg("text", { x: 8, y: bottom }, "0"));
  trend.forEach((day, i) => {
    const x = 40 + i * slot + slot * 0.15;
    const w = Math.min(48, Math.max(2, slot * 0.7));
    const ok = day.completed * scale;
    const bad = day.failed * scale;
    chart.append(
      svg("rect", { x, y: bottom - ok, width: w, height: ok, fill: GREEN }),
      svg("rect", { x, y: bottom - ok - bad, width: w, height: bad, fill: RED }),
    );
    if (trend.length <= 14 || i % Math.ceil(trend.length / 10) === 0) {
      chart.append(svg("text", { x, y: height - 8 }, day.day.slice(5)));
    }
  });
  return chart;
}

function stat(label, value) {
  return el("div", { class: "stat" }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

export async function render(view, _params, signal) {
  setTitle("Analytics");
  const query = new URLSearchParams(location.search);
  const since = query.has("since") ? query.get("since") : "7d";
  const review = await api(`/reports/analytics?${new URLSearchParams(since ? { since } : {})}`, { signal });
  const all = review.overall;
  const pick = el("select", { id: "since", name: "since" },
    [["24h", "last 24 hours"], ["7d", "last 7 days"], ["30d", "last 30 days"], ["", "all time"]].map(([v, t]) => el("option", { value: v }, t)));
  pick.value = since;
  pick.addEventListener("change", () => (location.search = new URLSearchParams({ since: pick.value }).toString()));

  view.append(
    el("h1", {}, "Analytics"),
    // The service counts whole UTC days: say from which midnight this window starts.
    el("div", { class: "actions" }, el("label", { for: "since" }, "Runs from"), pick,
      review.since ? el("span", { class: "muted", "data-testid": "since" }, `from ${review.since.slice(0, 10)} 00:00 UTC`) : null),
    el("div", { class: "cards" },
      stat("runs ended", String(all.runs)),
      stat("success rate", percent(all.success_rate)),
      stat("valid on first try", percent(all.first_try_valid_rate)),
      stat("rescued by the retry", String(all.rescued)),
      stat("retries", String(all.retries)),
      stat("tokens", (all.tokens.input + all.tokens.output).toLocaleString("en")),
      stat("latency p50 / p95", `${ms(all.run_latency.p50_ms) || "—"} / ${ms(all.run_latency.p95_ms) || "—"}`),
      stat("still running or lost", String(all.incomplete)),
      // runs whose model calls went through a provider batch, beside the ones called live
      stat("batch / live", `${all.batched} / ${all.runs - all.batched}`),
    ),
  );
  if (!review.agents.length) {
    view.append(el("p", { class: "muted" }, "No runs in this period."));
    return;
  }
  view.append(
    el("h2", {}, "Success rate by agent"),
    bars("Success rate", review.agents.map((a) => [a.agent_id, a.success_rate || 0, GREEN]), 1, percent),
  );
  const failures = Object.entries(all.failures_by_type);
  if (failures.length) {
    const peak = Math.max(...failures.map(([, n]) => n));
    view.append(el("h2", {}, "Failures by type"), bars("Failed runs", failures.map(([t, n]) => [t, n, ORANGE]), peak, String));
  }
  view.append(el("h2", {}, "Trend"), days(all.days));
  view.append(
    el("h2", {}, "By agent"),
    el("div", { class: "table-wrap" }, el("table", {},
      el("thead", {}, el("tr", {}, ["Agent", "Runs", "Success", "First try", "Rescued", "Retries", "Tokens", "Batch", "p50", "p95"].map((h, i) => el("th", { class: NARROW.has(i) ? "num hide-narrow" : i ? "num" : "" }, h)))),
      el("tbody", {}, review.agents.map((a) => el("tr", {},
        el("td", {}, a.agent_id),
        el("td", { class: "num" }, String(a.runs)),
        el("td", { class: "num" }, percent(a.success_rate)),
        el("td", { class: "num hide-narrow" }, percent(a.first_try_valid_rate)),
        el("td", { class: "num" }, String(a.rescued)),
        el("td", { class: "num hide-narrow" }, String(a.retries)),
        el("td", { class: "num hide-narrow" }, (a.tokens.input + a.tokens.output).toLocaleString("en")),
        el("td", { class: "num hide-narrow" }, String(a.batched)),
        el("td", { class: "num hide-narrow" }, ms(a.run_latency.p50_ms)),
        el("td", { class: "num" }, ms(a.run_latency.p95_ms)),
      )))))
  );
}
