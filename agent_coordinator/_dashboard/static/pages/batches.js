// "/batches": the batches of sessions run through a provider's batch API, newest first: status,
// items completed / failed / pending, the provider batches with their counts, and each item's
// session; paging on the server (cursor).
import { api, badge, el, link, pathPart, setTitle, when } from "../app.js";

export async function render(view, _params, signal) {
  setTitle("Batches");
  const query = new URLSearchParams(location.search);
  const params = new URLSearchParams({ limit: query.get("limit") || "50" });
  if (query.get("cursor")) params.set("cursor", query.get("cursor"));
  const page = await api(`/batches?${params}`, { signal });

  const rows = page.items.map((batch) => {
    const provider = batch.provider_batches.map((sent) => {
      const counts = sent.counts ? ` ${sent.counts.succeeded}/${sent.counts.total} done, ${sent.counts.failed} failed` : "";
      return el("div", { class: "mono" }, `${sent.provider_batch_id}:${counts}`);
    });
    const items = el("details", {}, el("summary", {}, `${batch.items.length} items`),
      el("ul", {}, batch.items.map((item) =>
        el("li", {}, `${item.id}: `, item.status === "deleted" ? "deleted" : link(`/sessions/${pathPart(item.session_id)}`, item.session_id), " ", item.status === "deleted" ? "" : badge(item.status)))));
    return el("tr", { "data-batch": batch.batch_id },
      el("td", { class: "mono" }, batch.batch_id, items),
      el("td", {}, badge(batch.status)),
      el("td", {}, link(`/agents/${pathPart(batch.agent_name)}`, batch.agent_name)),
      el("td", { class: "num", "data-testid": "batch-counts" }, `${batch.completed} / ${batch.failed} / ${batch.pending}`),
      el("td", { class: "hide-narrow" }, provider.length ? provider : el("span", { class: "muted" }, batch.status === "ended" ? "none" : "none yet")),
      el("td", { class: "hide-narrow" }, when(batch.created_at)));
  });

  const more = page.next_cursor === null ? "" :
    el("p", {}, link(`/batches?${new URLSearchParams({ limit: params.get("limit"), cursor: String(page.next_cursor) })}`, "Older batches"));
  view.append(
    el("h1", {}, "Batches"),
    el("p", { class: "muted" }, "Sessions started with POST /batches, run through the provider's batch API by the runners."),
    page.items.length
      ? el("div", { class: "table-wrap" }, el("table", {},
          el("thead", {}, el("tr", {},
            el("th", {}, "Batch"), el("th", {}, "Status"), el("th", {}, "Agent"),
            el("th", { class: "num" }, "Completed / failed / pending"),
            el("th", { class: "hide-narrow" }, "Provider batches"), el("th", { class: "hide-narrow" }, "Created"))),
          el("tbody", {}, rows)))
      : el("p", { class: "muted" }, "No batches yet."),
    more);
}
