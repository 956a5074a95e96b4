// "/agents/{name}": the agent editor, tabs General / Input Schema / Output Schema / MCP Servers.
import { ApiError, api, el, errorBox, link, pathPart, plural, pretty, setTitle } from "../app.js";
import { CodeEditor } from "../editor.js";
import { toYaml } from "../yaml.js";

export async function render(view, [name], signal) {
  setTitle(name);
  const base = `/agents/${pathPart(name)}`;
  const [agent, source] = await Promise.all([api(base, { signal }), api(`${base}/source`, { signal })]);
  const state = { source };
  view.append(
    el("p", { class: "muted" }, link("/agents", "Agents"), " / ", name),
    el("h1", {}, `Agent: ${name}`),
  );
  const tabs = [
    ["general", "General", () => general(agent, state)],
    ["input", "Input Schema", () => schemaPanel(agent, state, "parameters_schema", base)],
    ["output", "Output Schema", () => schemaPanel(agent, state, outputField(agent), base)],
    ["mcp", "MCP Servers", () => mcpPanel(state)],
  ];
  const list = el("div", { role: "tablist", "aria-label": "Agent sections" });
  const panels = [];
  const buttons = tabs.map(([id, title, build], index) => {
    const panel = el("div", { role: "tabpanel", id: `panel-${id}`, "aria-labelledby": `tab-${id}`, hidden: index !== 0 });
    panel.append(build());
    panels.push(panel);
    return el("button", {
      type: "button",
      role: "tab",
      id: `tab-${id}`,
      "aria-controls": `panel-${id}`,
      "aria-selected": index === 0 ? "true" : "false",
      tabindex: index === 0 ? "0" : "-1",
    }, title);
  });
  const select = (index, focus) => {
    buttons.forEach((button, i) => {
      button.setAttribute("aria-selected", i === index ? "true" : "false");
      button.tabIndex = i === index ? 0 : -1;
      panels[i].hidden = i !== index;
    });
    if (focus) buttons[index].focus();
    history.replaceState(null, "", `#${tabs[index][0]}`);
  };
  buttons.forEach((button, index) => {
    button.addEventListener("click", () => select(index, false));
    button.addEventListener("keydown", (event) => {
      const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
      if (step) select((index + step + buttons.length) % buttons.length, true);
    });
  });
  list.append(...buttons);
  view.append(list, ...panels);
  const wanted = tabs.findIndex(([id]) => `#${id}` === location.hash);
  if (wanted > 0) select(wanted, false);
}

function outputField(agent) {
  return agent.output_schema === null && agent.default_output_schema !== null ? "default_output_schema" : "output_schema";
}

function general(agent, state) {
  const facts = [
    ["Description", agent.description || "—"],
    ["File", el("code", {}, state.source.file)],
    ["Type", agent.type],
    ["Model", agent.model || "chosen at run time"],
    ["Escalation tiers", agent.model_tiers.join(", ") || "none"],
    ["Tools", agent.tools.join(", ") || "none"],
    ["Max steps", agent.max_steps ?? "default"],
    ["Options", Object.keys(agent.options).length ? el("code", {}, JSON.stringify(agent.options)) : "defaults"],
  ];
  return el("div", {},
    el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("h3", {}, "System prompt"),
    el("pre", {}, agent.system_prompt),
    el("div", { class: "actions" }, link(`/runs/new?agent=${pathPart(agent.name)}`, "Start a run with this agent")),
  );
}

function mcpPanel(state) {
  const servers = state.source.mcp_servers;
  if (!servers.length) return el("p", { class: "muted" }, "This agent uses no MCP servers (mcpServers in its file).");
  return el("div", {}, servers.map((server) =>
    el("div", { class: "card" },
      el("h3", {}, server.name),
      el("dl", { class: "facts" },
        el("dt", {}, "Tools"), el("dd", {}, server.tools.join(", ")),
        el("dt", {}, server.url ? "URL" : "Command"),
        el("dd", {}, el("code", {}, server.url || [server.command, ...server.args].join(" "))),
      ),
    )));
}

function schemaPanel(agent, state, field, base) {
  const kind = field === "parameters_schema" ? "parameters" : "output";
  const id = `editor-${kind}`;
  const initial = state.source.schemas[field];
  let format = "json";
  const editor = new CodeEditor({ id, label: `${field} (JSON Schema)`, value: initial === undefined ? "{\n}\n" : pretty(initial) + "\n" });
  const findings = el("ul", { class: "findings", "aria-live": "polite", "data-testid": `findings-${kind}` });
  const status = el("div", { "aria-live": "polite", "data-testid": `status-${kind}` });
  const formatPick = el("select", { id: `${id}-format` },
    el("option", { value: "json" }, "JSON"), el("option", { value: "yaml" }, "YAML"));

  const check = async () => {
    status.replaceChildren(el("span", { class: "muted" }, "Checking…"));
    const result = await api("/agents/check-schema-text", { method: "POST", body: { text: editor.value, format, kind } });
    show(result);
    return result;
  };
  const show = (result) => {
    editor.mark(result.findings);
    findings.replaceChildren(...result.findings.map((f) =>
      el("li", { class: f.severity },
        el("button", { type: "button", class: "secondary where", onclick: () => f.line && editor.focusLine(f.line), disabled: !f.line },
          f.line ? `line ${f.line}` : "—"),
        el("span", { class: "where" }, f.path), `${f.severity}: ${f.message}`)));
    const errors = result.findings.filter((f) => f.severity === "error").length;
    status.replaceChildren(result.valid
      ? el("span", { class: "ok-text" }, errors ? "" : `Schema valid${result.findings.length ? ` (${plural(result.findings.length, "note")})` : ""}`)
      : el("span", { class: "bad-text" }, `Schema invalid: ${plural(errors, "error")}`));
  };
  const save = async () => {
    try {
      const saved = await api(`${base}/schemas/${field}`, {
        method: "PUT",
        body: { text: editor.value, format, version: state.source.version },
      });
      state.source = saved;
      editor.mark([]);
      findings.replaceChildren();
      status.replaceChildren(el("span", { class: "ok-text" }, `Saved to ${saved.file}`),
        saved.reloaded ? "" : el("span", { class: "muted" }, " (the service keeps the old fleet: another file has a problem)"));
    } catch (error) {
      if (error instanceof ApiError && error.body.error === "AgentFileChanged") {
        status.replaceChildren(errorBox(error), el("button", { type: "button", class: "secondary", onclick: () => location.reload() }, "Reload from disk"));
      } else if (error instanceof ApiError && error.body.error === "InvalidSchema") {
        status.replaceChildren(errorBox(error));
        await check();
        status.prepend(errorBox(error));
      } else {
        status.replaceChildren(errorBox(error));
      }
    }
  };
  formatPick.addEventListener("change", async () => {
    const wanted = formatPick.value;
    const result = await api("/agents/check-schema-text", { method: "POST", body: { text: editor.value, format, kind } });
    if (result.findings.some((f) => f.source === "syntax")) {
      formatPick.value = format;
      show(result);
      return;
    }
    format = wanted;
    editor.value = wanted === "yaml" ? toYaml(result.schema) : pretty(result.schema) + "\n";
    editor.mark([]);
  });

  const info = kind === "output"
    ? el("p", { class: "notice" }, "The output schema is enforced on every run (start and resume). Validation happens in the executor, with 1 retry on failure by default.")
    : el("p", { class: "notice" }, "Parameters are checked against this schema before a run starts.");
  return el("div", {},
    el("div", { class: "actions" }, el("span", {}, el("code", {}, field)), el("label", { for: `${id}-format` }, "Format"), formatPick),
    editor.node,
    info,
    el("div", { class: "actions" },
      el("button", { type: "button", onclick: () => check().catch((e) => status.replaceChildren(errorBox(e))) }, "Validate Schema"),
      el("button", { type: "button", class: "secondary", onclick: save }, "Save"),
    ),
    status,
    findings,
  );
}
