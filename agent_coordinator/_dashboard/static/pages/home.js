// "/": where to go, with the fleet's state and the latest sessions at a glance.
import { api, el, link, plural, setTitle } from "../app.js";

export async function render(view, _params, signal) {
  setTitle("Dashboard");
  const [fleet, sessions, failed] = await Promise.all([
    api("/fleet", { signal }),
    api("/reports/sessions?limit=1", { signal }),
    api("/reports/sessions?limit=1&status=failed", { signal }),
  ]);
  const problems = fleet.problems.filter((p) => p.severity === "error").length;
  view.append(
    el("h1", {}, "agentshape dashboard"),
    el(
      "div",
      { class: "grid" },
      card("/agents", "Agents", `${plural(fleet.loaded.length, "agent")}; ${problems ? plural(problems, "config problem") : "config valid"}`),
      card("/sessions", "Sessions", `${counted(sessions, "session")}, ${counted(failed)} failed`),
      card("/runs/new", "Start a run", "Run an agent with a prompt, parameters and a schema"),
      card("/schemas", "Schemas", "The named output schema registry"),
      card("/analytics", "Analytics", "Success rates, failures, retries, tokens, latency"),
    ),
    el("p", { class: "muted" }, "Everything here comes from the service's HTTP API; see ", link("/docs", "/docs"), "."),
  );
}

// A total counted up to the service's cap reads "10,000+" beyond it; with a noun, "1 session",
// "2 sessions", "10,000+ sessions".
function counted(page, noun = "") {
  const more = page.total_exact === false ? "+" : "";
  if (!noun) return `${page.total.toLocaleString("en")}${more}`;
  return plural(page.total, noun, more);
}

function card(href, title, text) {
  return el("div", { class: "card" }, el("h2", {}, link(href, title)), el("p", { class: "muted" }, text));
}
