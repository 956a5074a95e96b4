// "/schemas": the named schema registry: list, view, add (checked first), delete.
import { api, el, errorBox, pathPart, pretty, setTitle, when } from "../app.js";
import { CodeEditor } from "../editor.js";

export async function render(view, _params, signal) {
  setTitle("Schemas");
  const list = await api("/schemas", { signal });
  const shown = el("div", { "aria-live": "polite" });
  const rows = list.map((entry) => {
    const open = el("button", { type: "button", class: "secondary" }, "View");
    const remove = el("button", { type: "button", class: "danger" }, "Delete");
    open.addEventListener("click", async () => {
      try {
        const full = await api(`/schemas/${pathPart(entry.name)}`);
        shown.replaceChildren(el("section", { class: "card" }, el("h2", {}, `Schema: ${full.name}`),
          full.description ? el("p", {}, full.description) : "", el("pre", { "data-testid": "schema-view" }, pretty(full.schema))));
      } catch (error) {
        shown.replaceChildren(errorBox(error));
      }
    });
    remove.addEventListener("click", async () => {
      if (!confirm(`Delete the schema ${entry.name}?`)) return;
      try {
        await api(`/schemas/${pathPart(entry.name)}`, { method: "DELETE" });
        location.reload();
      } catch (error) {
        shown.replaceChildren(errorBox(error));
      }
    });
    return el("tr", {},
      el("td", {}, entry.name, entry.description ? el("div", { class: "muted" }, entry.description) : ""),
      el("td", { class: "hide-narrow mono" }, entry.hash.slice(0, 19)),
      el("td", { class: "hide-narrow" }, when(entry.modified_at)),
      el("td", {}, el("div", { class: "actions" }, open, remove)));
  });

  const name = el("input", { id: "schema-name", type: "text", required: true, placeholder: "code-count" });
  const description = el("input", { id: "schema-description", type: "text" });
  const editor = new CodeEditor({ id: "schema-text", label: "Schema (JSON)", value: '{\n  "type": "object",\n  "properties": {}\n}\n' });
  const status = el("div", { "aria-live": "polite" });
  const findings = el("ul", { class: "findings" });
  const check = async () => {
    const result = await api("/agents/check-schema-text", { method: "POST", body: { text: editor.value, format: "json", kind: "output" } });
    editor.mark(result.findings);
    findings.replaceChildren(...result.findings.filter((f) => f.severity !== "info").map((f) =>
      el("li", { class: f.severity }, el("span", { class: "where" }, f.line ? `line ${f.line}` : ""), el("span", { class: "where" }, f.path), f.message)));
    return result;
  };
  const form = el("form", { class: "card", "aria-labelledby": "add-title" },
    el("h2", { id: "add-title" }, "Add a schema"),
    el("label", { for: "schema-name" }, "Name"), name,
    el("label", { for: "schema-description" }, "Description"), description,
    el("label", { for: "schema-text" }, "Schema (JSON)"), editor.node,
    el("div", { class: "actions" },
      el("button", { type: "button", class: "secondary", onclick: () => check().catch((e) => status.replaceChildren(errorBox(e))) }, "Validate Schema"),
      el("button", { type: "submit" }, "Add")),
    status, findings);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const result = await check();
      if (!result.valid) {
        status.replaceChildren(el("span", { class: "bad-text" }, "Not added: the schema has errors."));
        return;
      }
      await api("/schemas", { method: "POST", body: { name: name.value.trim(), description: description.value || null, schema: result.schema } });
      location.reload();
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  });

  view.append(
    el("h1", {}, "Schemas"),
    list.length
      ? el("div", { class: "table-wrap" }, el("table", {},
          el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", { class: "hide-narrow" }, "Hash"), el("th", { class: "hide-narrow" }, "Modified"), el("th", {}, ""))),
          el("tbody", {}, rows)))
      : el("p", { class: "muted" }, "No schemas are registered yet."),
    shown,
    form,
  );
}
