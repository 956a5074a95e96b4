// "/agents": the fleet, each agent's model, tools and contract, and the config's state from disk,
// and "New agent", which writes a new agents/<id>/agent.yml through POST /agents.
import { api, el, errorBox, link, pathPart, plural, setTitle } from "../app.js";

export async function render(view, _params, signal) {
  setTitle("Agents");
  const [agents, fleet] = await Promise.all([api("/agents", { signal }), api("/fleet", { signal })]);
  view.append(el("h1", {}, "Agents"));

  const errors = fleet.problems.filter((p) => p.severity === "error");
  const state = el("section", { class: "card", "aria-labelledby": "config-state" });
  state.append(el("h2", { id: "config-state" }, "Config"));
  state.append(
    el("p", {}, "Fleet directory ", el("code", {}, fleet.directory), ": ",
      fleet.valid
        ? el("span", { class: "ok-text", "data-testid": "fleet-state" }, "valid")
        : el("span", { class: "bad-text", "data-testid": "fleet-state" }, plural(errors.length, "problem")),
    ),
  );
  if (fleet.problems.length) {
    state.append(
      el("ul", { class: "findings", "aria-label": "Config problems" },
        fleet.problems.map((p) =>
          el("li", { class: p.severity },
            el("span", { class: "where" }, p.line ? `${p.file}:${p.line}` : p.file),
            p.field ? el("code", {}, p.field) : "", p.field ? ": " : "",
            p.message,
          ),
        ),
      ),
    );
  }
  view.append(state);

  const rows = agents.map((agent) => {
    const problems = fleet.problems.filter((p) => fleet.files[agent.name] && p.file === fleet.files[agent.name]);
    const bad = problems.some((p) => p.severity === "error");
    return el("tr", {},
      el("td", {}, link(`/agents/${pathPart(agent.name)}`, agent.name),
        agent.description ? el("div", { class: "muted" }, agent.description) : ""),
      el("td", { class: "hide-narrow" }, agent.model || el("span", { class: "muted" }, "run-time")),
      el("td", { class: "hide-narrow" }, agent.tools.length ? agent.tools.join(", ") : el("span", { class: "muted" }, "none")),
      el("td", {}, agent.contract === "agent" ? "output_schema" : agent.contract === "default" ? "default_output_schema" : el("span", { class: "muted" }, "text"),
        fields(fleet.contract_fields[agent.name] || [])),
      el("td", {}, bad ? el("span", { class: "badge failed" }, "problems") :
        problems.length ? el("span", { class: "badge cancelled" }, plural(problems.length, "warning")) :
        el("span", { class: "badge valid" }, "valid")),
    );
  });
  view.append(
    el("div", { class: "table-wrap" },
      el("table", {},
        el("thead", {}, el("tr", {},
          el("th", {}, "Agent"), el("th", { class: "hide-narrow" }, "Model"), el("th", { class: "hide-narrow" }, "Tools"),
          el("th", {}, "Contract"), el("th", {}, "Config"))),
        el("tbody", {}, rows),
      ),
    ),
  );
  view.append(newAgentForm());
}

// "New agent": id, description, system prompt and an optional output schema (JSON), posted as
// an agent blueprint (`POST /agents`); the service answers every problem `agentshape list` finds, shown here.
function newAgentForm() {
  const name = el("input", { id: "new-agent-name", type: "text", required: true, autocomplete: "off" });
  const description = el("input", { id: "new-agent-description", type: "text" });
  const system = el("textarea", { id: "new-agent-system", rows: "4", required: true });
  const schema = el("textarea", { id: "new-agent-schema", rows: "6", class: "mono", placeholder: '{"type": "object", "properties": {...}}' });
  const status = el("div", { "aria-live": "polite" });
  const form = el("form", { class: "card", "aria-labelledby": "new-agent-title" },
    el("h2", { id: "new-agent-title" }, "New agent"),
    el("label", { for: "new-agent-name" }, "Name", el("span", { class: "hint" }, "its folder: agents/<name>/agent.yml")), name,
    el("label", { for: "new-agent-description" }, "Description"), description,
    el("label", { for: "new-agent-system" }, "System prompt"), system,
    el("label", { for: "new-agent-schema" }, "Output schema", el("span", { class: "hint" }, "JSON; empty for a text answer")), schema,
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Create agent")),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { name: name.value.trim(), system_prompt: system.value };
    if (description.value.trim()) body.description = description.value.trim();
    if (schema.value.trim()) {
      try {
        body.output_schema = JSON.parse(schema.value);
      } catch (error) {
        status.replaceChildren(el("div", { class: "error", role: "alert" }, el("strong", {}, "Output schema"), ": not JSON: ", error.message));
        return;
      }
    }
    try {
      const made = await api("/agents", { method: "POST", body });
      location.assign(`/agents/${pathPart(made.name)}`);
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  });
  return form;
}

// The contract's top-level fields: "summary: string*" (* required).
function fields(list) {
  if (!list.length) return "";
  return el("div", { class: "muted mono fields" },
    list.map((f, i) => [i ? ", " : "", `${f.name}${f.type ? `: ${f.type}` : ""}${f.required ? "*" : ""}`]));
}
