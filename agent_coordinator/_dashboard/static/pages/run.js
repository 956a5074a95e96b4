// "/runs/new": start a run: agent, prompt, parameters (a form generated from the agent's
// parameters_schema), an inline output schema or a registered schema's name, model, and the
// contract options (max retries, JSON extraction, strict JSON only, validation mode).
// Runs started here stream, so their session page shows the output as it is written.
import { api, el, errorBox, pathPart, pretty, setTitle } from "../app.js";

export async function render(view, _params, signal) {
  setTitle("Start a run");
  const [agents, schemas] = await Promise.all([api("/agents", { signal }), api("/schemas", { signal })]);
  const query = new URLSearchParams(location.search);
  const agentPick = el("select", { id: "run-agent", name: "agent", required: true },
    agents.map((a) => el("option", { value: a.name }, a.name)));
  if (query.get("agent")) agentPick.value = query.get("agent");
  const prompt = el("textarea", { id: "run-prompt", rows: "4", placeholder: "optional for an agent with parameters: they are the task" });
  const params = el("fieldset", {}, el("legend", {}, "Parameters"));
  const contract = el("fieldset", {}, el("legend", {}, "Output schema"));
  const model = el("input", { id: "run-model", type: "text", placeholder: "the agent's or the service's default" });
  const retries = el("input", { id: "run-retries", type: "number", min: "0", max: "10", placeholder: "default" });
  const choose = (id, values) => el("select", { id },
    el("option", { value: "" }, "(the agent's or the default)"), values.map((v) => el("option", { value: v }, v)));
  const extract = choose("run-extract-json", ["true", "false"]);
  const strictJson = choose("run-strict-json-only", ["true", "false"]);
  const validationMode = choose("run-validation-mode", ["strict", "lenient"]);
  const status = el("div", { "aria-live": "polite" });
  let collect = () => ({});
  let schemaChoice = () => ({});

  const refresh = async () => {
    const agent = await api(`/agents/${pathPart(agentPick.value)}`, { signal });
    collect = parametersForm(params, agent.parameters_schema);
    schemaChoice = schemaForm(contract, agent, schemas);
  };
  agentPick.addEventListener("change", () => refresh().catch((e) => status.replaceChildren(errorBox(e))));
  await refresh();

  const form = el("form", { class: "card", "aria-labelledby": "run-title" },
    el("label", { for: "run-agent" }, "Agent"), agentPick,
    el("label", { for: "run-prompt" }, "Prompt"), prompt,
    params, contract,
    el("label", { for: "run-model" }, "Model", el("span", { class: "hint" }, "such as openai:gpt-4.1-mini or test")), model,
    el("label", { for: "run-retries" }, "Max retries", el("span", { class: "hint" }, "re-prompts after an invalid output")), retries,
    el("label", { for: "run-extract-json" }, "Extract JSON", el("span", { class: "hint" }, "recover the JSON value from prose or a code fence")), extract,
    el("label", { for: "run-strict-json-only" }, "Strict JSON only", el("span", { class: "hint" }, "fail a reply with any text around the JSON")), strictJson,
    el("label", { for: "run-validation-mode" }, "Validation mode", el("span", { class: "hint" }, "strict asserts 'format'; lenient reads it as an annotation")), validationMode,
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Start run")),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const body = { type: "start_session", agent_name: agentPick.value, parameters: collect(), ...schemaChoice(), stream: true };
      if (prompt.value.trim()) body.prompt = prompt.value;
      if (model.value.trim()) body.model = model.value.trim();
      const options = {};
      if (retries.value !== "") options.max_retries = Number(retries.value);
      if (extract.value) options.extract_json = extract.value === "true";
      if (strictJson.value) options.strict_json_only = strictJson.value === "true";
      if (validationMode.value) options.validation_mode = validationMode.value;
      if (Object.keys(options).length) body.output_schema_options = options;
      const run = await api("/runs", { method: "POST", body });
      location.assign(`/sessions/${pathPart(run.session_id)}`);
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  });
  view.append(el("h1", { id: "run-title" }, "Start a run"), form);
}

// Build inputs for each property; return a function that reads them back as parameters.
function parametersForm(box, schema) {
  box.replaceChildren(el("legend", {}, "Parameters"));
  const props = schema && schema.type === "object" && schema.properties ? schema.properties : null;
  if (!schema) {
    box.append(el("p", { class: "muted" }, "This agent takes no parameters."));
    return () => ({});
  }
  if (!props) {
    const raw = el("textarea", { id: "param-json", rows: "4" }, "{}");
    box.append(el("label", { for: "param-json" }, "Parameters (JSON)"), raw);
    return () => JSON.parse(raw.value || "{}");
  }
  const required = new Set(schema.required || []);
  const readers = [];
  for (const [name, prop] of Object.entries(props)) {
    const id = `param-${name.replace(/[^A-Za-z0-9_-]/g, "_")}`;
    const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
    const hint = [prop.description, required.has(name) ? "required" : "optional"].filter(Boolean).join("; ");
    const label = el("label", { for: id }, name, el("span", { class: "hint" }, hint));
    let input;
    let read;
    if (Array.isArray(prop.enum)) {
      input = el("select", { id }, required.has(name) ? "" : el("option", { value: "" }, "(none)"),
        prop.enum.map((v, i) => el("option", { value: String(i) }, JSON.stringify(v))));
      read = () => (input.value === "" ? undefined : prop.enum[Number(input.value)]);
    } else if (type === "boolean") {
      input = el("input", { id, type: "checkbox" });
      read = () => input.checked;
    } else if (type === "integer" || type === "number") {
      input = el("input", { id, type: "number", step: type === "integer" ? "1" : "any", required: required.has(name) });
      read = () => (input.value === "" ? undefined : Number(input.value));
    } else if (type === "array" && prop.items && prop.items.type === "string") {
      input = el("textarea", { id, rows: "3", placeholder: "one item a line" });
      read = () => (input.value.trim() ? input.value.split("\n").map((s) => s.trim()).filter(Boolean) : undefined);
    } else if (type === "string") {
      input = el("input", { id, type: "text", required: required.has(name) });
      read = () => (input.value === "" ? undefined : input.value);
    } else {
      input = el("textarea", { id, rows: "3", placeholder: "JSON" });
      read = () => (input.value.trim() ? JSON.parse(input.value) : undefined);
    }
    if (prop.default !== undefined && input.type !== "checkbox" && input.tagName !== "SELECT") {
      input.value = typeof prop.default === "string" ? prop.default : JSON.stringify(prop.default);
    }
    box.append(label, input);
    readers.push([name, read]);
  }
  return () => {
    const values = {};
    for (const [name, read] of readers) {
      const value = read();
      if (value !== undefined) values[name] = value;
    }
    return values;
  };
}

function schemaForm(box, agent, schemas) {
  box.replaceChildren(el("legend", {}, "Output schema"));
  if (agent.output_schema) {
    box.append(el("p", { class: "muted" }, "This agent owns its contract (output_schema); every run is held to it."),
      el("pre", {}, pretty(agent.output_schema)));
    return () => ({});
  }
  const choice = (value, text) => el("label", { class: "hint" },
    el("input", { type: "radio", name: "schema-kind", value, checked: value === "default" }), ` ${text}`);
  const named = el("select", { id: "run-schema-name", "aria-label": "Registered schema" },
    schemas.map((s) => el("option", { value: s.name }, s.name)));
  const inline = el("textarea", { id: "run-schema-inline", rows: "6", "aria-label": "Inline schema (JSON)" }, '{\n  "type": "object"\n}');
  box.append(
    choice("default", agent.default_output_schema ? "the agent's default_output_schema" : "none (a text result)"),
    choice("named", "a registered schema"), named,
    choice("inline", "an inline schema (JSON)"), inline,
  );
  return () => {
    const kind = box.querySelector('input[name="schema-kind"]:checked').value;
    if (kind === "named") return { output_schema_name: named.value };
    if (kind === "inline") return { output_schema: JSON.parse(inline.value) };
    return {};
  };
}
