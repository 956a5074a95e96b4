// "/sessions": sessions with status, agent, model, attempts, tokens and duration; filters, paging
// on the server (cursor), and live updates from the server-sent events of changed sessions.
import { api, badge, el, follow, link, ms, pathPart, plural, setTitle, when } from "../app.js";

const STATUSES = ["", "queued", "running", "completed", "failed", "cancelled"];
const FILTERS = ["agent_name", "status", "error_type", "since", "until"];

export async function render(view, _params, signal) {
  setTitle("Sessions");
  const query = new URLSearchParams(location.search);
  const agents = await api("/agents", { signal });
  const params = new URLSearchParams({ limit: query.get("limit") || "50" });
  for (const name of [...FILTERS, "cursor"]) if (query.get(name)) params.set(name, query.get(name));
  const page = await api(`/reports/sessions?${params}`, { signal });

  const field = (name, label, control, hint) =>
    el("div", {}, el("label", { for: `f-${name}` }, label, hint ? el("span", { class: "hint" }, hint) : ""), control);
  const select = (name, options) => {
    const node = el("select", { id: `f-${name}`, name }, options.map(([value, text]) => el("option", { value }, text)));
    node.value = query.get(name) || "";
    return node;
  };
  const input = (name, placeholder) => el("input", { id: `f-${name}`, name, type: "text", placeholder, value: query.get(name) || "" });
  const form = el("form", { class: "card filters", role: "search", "aria-label": "Filter sessions" },
    field("agent_name", "Agent", select("agent_name", [["", "any"], ...agents.map((a) => [a.name, a.name])])),
    field("status", "Status", select("status", STATUSES.map((s) => [s, s || "any"]))),
    field("error_type", "Error type", select("error_type", [["", "any"], ...page.error_types.map((t) => [t, t])])),
    field("since", "Created since", input("since", "24h, 7d, 2025-01-05")),
    field("until", "Created before", input("until", "1h, 2025-01-06")),
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Filter"), link("/sessions", "Clear")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const name of FILTERS) {
      const value = form.elements[name].value.trim();
      if (value) next.set(name, value);
    }
    location.search = next.toString();
  });

  const body = el("tbody", {});
  const rows = new Map();
  const draw = (row) => {
    const tr = el("tr", { "data-session": row.session_id },
      el("td", {}, link(`/sessions/${pathPart(row.session_id)}`, row.session_id),
        row.parent_session_id ? el("div", { class: "muted" }, "child of ", link(`/sessions/${pathPart(row.parent_session_id)}`, row.parent_session_id)) : ""),
      el("td", {}, badge(row.status), row.error_type ? el("div", { class: "muted" }, row.error_type) : ""),
      el("td", {}, link(`/agents/${pathPart(row.agent_name)}`, row.agent_name)),
      el("td", { class: "hide-narrow" }, row.model || ""),
      el("td", { class: "num" }, String(row.attempts)),
      el("td", { class: "num hide-narrow" }, row.tokens === null ? "" : row.tokens.toLocaleString("en")),
      el("td", { class: "num" }, ms(row.duration_ms)),
      el("td", { class: "hide-narrow" }, when(row.created_at)),
    );
    const old = rows.get(row.session_id);
    if (old) old.replaceWith(tr);
    rows.set(row.session_id, tr);
    return tr;
  };
  body.append(...page.items.map(draw));
  const empty = el("p", { class: "muted", hidden: page.items.length > 0 }, "No sessions match.");

  let count = page.total;
  // Beyond the service's count cap the total is a lower bound: "10,000+ sessions".
  const more = page.total_exact === false ? "+" : "";
  const total = el("span", { "data-testid": "total" }, plural(count, "session", more));
  const pager = el("nav", { class: "pager", "aria-label": "Pages" }, total);
  if (query.get("cursor")) {
    const first = new URLSearchParams(query);
    first.delete("cursor");
    pager.append(link(`/sessions?${first}`, "Newest"));
  }
  if (page.next_cursor) {
    const next = new URLSearchParams(query);
    next.set("cursor", String(page.next_cursor));
    pager.append(link(`/sessions?${next}`, "Older →"));
  }
  const live = el("span", { class: "live", "aria-live": "off" }, "live");
  pager.append(live);

  const matches = (row) =>
    (!query.get("agent_name") || row.agent_name === query.get("agent_name")) &&
    (!query.get("status") || row.status === query.get("status")) &&
    (!query.get("error_type") || row.error_type === query.get("error_type")) &&
    !query.get("until") && !query.get("cursor");
  follow("/reports/sessions/events", (type, row) => {
    if (type !== "session") return;
    if (rows.has(row.session_id)) draw(row);
    else if (matches(row)) {
      body.prepend(draw(row));
      empty.hidden = true;
      count += 1;
      total.textContent = plural(count, "session", more);
    }
  }, signal);

  view.append(
    el("h1", {}, "Sessions"),
    form,
    pager,
    el("div", { class: "table-wrap" },
      el("table", {},
        el("thead", {}, el("tr", {},
          el("th", {}, "Session"), el("th", {}, "Status"), el("th", {}, "Agent"),
          el("th", { class: "hide-narrow" }, "Model"), el("th", { class: "num" }, "Attempts"),
          el("th", { class: "num hide-narrow" }, "Tokens"), el("th", { class: "num" }, "Duration"),
          el("th", { class: "hide-narrow" }, "Created"))),
        body)),
    empty,
  );
}
