// "/evals": the `agentshape eval` reports of the service's evals directory, one table an eval.
import { api, el, ms, setTitle, when } from "../app.js";

function percent(value) {
  return value === null || value === undefined ? "—" : `${Math.round(value * 100)}%`;
}

function number(value, digits = 2) {
  return value === null || value === undefined ? "—" : value.toFixed(digits);
}

function cost(value) {
  return value === null || value === undefined ? "—" : `$${value.toFixed(4)}`;
}

function failures(counts) {
  const entries = Object.entries(counts);
  return entries.length ? entries.map(([kind, n]) => `${kind} ${n}`).join(", ") : "—";
}

const HEADINGS = ["Model", "Contract met", "First try", "Rescued by re-ask", "Mean attempts", "Tokens", "p50", "p95", "Cost", "Agreement", "Failures"];

function table(report) {
  return el("div", { class: "table-wrap" }, el("table", {},
    el("thead", {}, el("tr", {}, HEADINGS.map((h, i) => el("th", { class: i && i < 10 ? "num" : "" }, h)))),
    el("tbody", {}, report.models.map((m) => el("tr", {},
      el("td", {}, m.model),
      el("td", { class: "num" }, `${m.completed}/${m.tasks} (${percent(m.contract_success)})`),
      el("td", { class: "num" }, percent(m.first_try_validity)),
      el("td", { class: "num" }, String(m.rescued_by_reask)),
      el("td", { class: "num" }, number(m.mean_attempts)),
      el("td", { class: "num" }, (m.input_tokens + m.output_tokens).toLocaleString("en")),
      el("td", { class: "num" }, ms(m.latency_ms.p50)),
      el("td", { class: "num" }, ms(m.latency_ms.p95)),
      el("td", { class: "num" }, cost(m.cost_usd)),
      el("td", { class: "num" }, m.agreement ? percent(m.agreement.share) : "—"),
      el("td", {}, failures(m.failures)),
    )))));
}

export async function render(view, _params, signal) {
  setTitle("Evals");
  const found = await api("/reports/evals", { signal });
  view.append(el("h1", {}, "Evals"));
  if (found.evals_dir === null) {
    view.append(el("p", { class: "muted" }, "This service shows no evals: start it with ",
      el("code", {}, "--evals-dir DIR"), " and write evals there with ",
      el("code", {}, "agentshape eval AGENT --tasks F --models M1,M2 --out DIR/NAME"), "."));
    return;
  }
  view.append(el("p", { class: "muted" }, "Reports read from ", el("code", {}, found.evals_dir), "."));
  if (!found.evals.length) {
    view.append(el("p", { class: "muted" }, "No eval reports there yet."));
    return;
  }
  for (const entry of found.evals) {
    const section = el("section", { class: "card", "data-testid": "eval" });
    if (entry.report === null) {
      section.append(el("h2", {}, entry.path), el("p", { class: "error", role: "alert" }, entry.error));
    } else {
      const report = entry.report;
      section.append(
        el("h2", {}, `${report.agent}: ${report.tasks} task${report.tasks === 1 ? "" : "s"}`),
        el("p", { class: "muted" }, `${entry.path}, finished ${when(report.finished_at)}`),
        table(report),
      );
    }
    view.append(section);
  }
}
