// "/sessions/{id}": status, the output-schema verdict with its errors, the retries, every attempt
// (raw output, errors, the re-prompt that followed), the result, parent and children, resume,
// delete.
// While a run goes on, its output so far, from the run's server-sent events.
import { ApiError, api, badge, el, errorBox, follow, link, ms, pathPart, pretty, setTitle, when } from "../app.js";

const ENDED = new Set(["completed", "failed", "cancelled"]);

export async function render(view, [id], signal) {
  setTitle(id);
  const content = el("div", {});
  view.append(el("p", { class: "muted" }, link("/sessions", "Sessions"), " / ", id), content);
  let shown = null;
  let drawn = 0; // draws started; only the latest one may fill the page
  let again = null;
  const draw = async () => {
    const mine = ++drawn;
    const base = `/sessions/${pathPart(id)}`;
    // The session first: when it has ended, its row and result, read after it, show the end.
    const session = await api(base, { signal });
    const [row, result] = await Promise.all([
      api(`/reports${base}`, { signal }),
      api(`${base}/result`, { signal }).catch((error) => {
        if (error instanceof ApiError && error.body.error === "ResultNotReady") return null;
        throw error;
      }),
    ]);
    if (mine !== drawn) return; // a later draw is under way, with newer data
    shown = session.status;
    const latest = session.runs[session.runs.length - 1];
    watch(latest && !ENDED.has(latest.status) ? latest.run_id : null);
    content.replaceChildren(...build(session, row, result, draw, live));
    show();
    // While a run goes on, look again now and then too: a change the event stream reported
    // before it was connected would otherwise be missed.
    clearTimeout(again);
    if (!ENDED.has(session.status) && !signal.aborted) again = setTimeout(() => draw().catch(() => {}), 2000);
  };
  // The output of the run going on, as its events bring it (one stream per run, across draws).
  let live = { run: null, stop: null, text: "", note: "", node: null, label: null };
  const show = () => {
    if (live.node) live.node.textContent = live.text || "(nothing yet)";
    if (live.label) live.label.textContent = live.note;
  };
  const watch = (runId) => {
    if (live.run === runId) return;
    if (live.stop) live.stop.abort();
    live = { run: runId, stop: null, text: "", note: "", node: null, label: null };
    if (runId === null) return;
    const stop = new AbortController();
    signal.addEventListener("abort", () => stop.abort());
    live.stop = stop;
    const mine = live;
    let reply = "";
    let step = 0;
    let partial = false; // once the output is being written, the reply text is not shown
    follow(`/runs/${pathPart(runId)}/events`, (type, data) => {
      if (type === "partial_output") {
        partial = true;
        mine.text = pretty(data.data);
        mine.note = `Attempt ${data.attempt}, as far as it is written`;
      } else if (type === "retry_started") {
        mine.note = `Attempt ${data.attempt} failed (${data.reason}); the model is asked again`;
      } else if (type === "text_delta" && !partial) {
        if (data.step !== step) reply = "";
        step = data.step;
        reply += data.text;
        mine.text = reply;
        mine.note = "The reply, as far as it is written";
      } else if (type === "end") {
        stop.abort(); // the stream would only say "end" again
        draw().catch(() => {});
        return;
      } else return;
      if (live === mine) show();
    }, stop.signal);
  };
  signal.addEventListener("abort", () => clearTimeout(again));
  follow("/reports/sessions/events", (type, row) => {
    if (type === "session" && row.session_id === id && row.status !== shown) draw().catch(() => {});
  }, signal);
  await draw();
}

function verdict(result, row) {
  const out = [];
  const validation = result && result.schema_validation;
  const failure = result && result.error;
  const invalid = failure && failure.type === "output_schema_validation_failed";
  if (invalid || (validation && !validation.valid)) {
    out.push(el("p", { class: "verdict" }, "Output Schema: ", el("span", { class: "bad-text", "data-testid": "schema-verdict" }, "Validation Failed")));
    const errors = (failure && failure.validation_errors.length ? failure.validation_errors : (validation && validation.errors) || []);
    out.push(el("h3", {}, "Errors"), el("ul", { class: "findings", "data-testid": "validation-errors" },
      errors.map((text) => el("li", { class: "error" }, text))));
  } else if (validation) {
    out.push(el("p", { class: "verdict" }, "Output Schema: ", el("span", { class: "ok-text", "data-testid": "schema-verdict" }, "Valid"),
      validation.schema_name ? el("span", { class: "muted" }, ` (schema ${validation.schema_name})`) : ""));
  } else if (result && result.status === "completed") {
    out.push(el("p", { class: "verdict muted" }, "Output Schema: none (a text result)"));
  } else if (failure) {
    out.push(el("p", { class: "verdict" }, "Failed: ", el("span", { class: "bad-text" }, failure.type), " ", failure.message));
  }
  if (row.max_retries !== null && (validation || invalid)) {
    const exhausted = invalid && row.retries >= row.max_retries;
    out.push(el("p", { "data-testid": "retries" }, `Retry attempts: ${row.retries}/${row.max_retries}${exhausted ? " exhausted" : ""}`));
  }
  return out;
}

function attemptBlock(attempt, reprompt) {
  const ok = !attempt.errors.length;
  return el("div", { class: `attempt ${ok ? "ok" : "bad"}` },
    el("h4", {}, `Attempt ${attempt.number}`, " ", ok ? badge("valid") : el("span", { class: "badge invalid" }, "invalid"),
      el("span", { class: "muted" }, ` ${attempt.mode}${attempt.model ? `, ${attempt.model}` : ""}${attempt.tool_name ? `, ${attempt.tool_name}` : ""}`)),
    el("div", { class: "muted" }, "Raw output"),
    el("pre", { class: "raw-output" }, attempt.raw_output || "(empty)"),
    ok ? "" : el("ul", { class: "findings" }, attempt.errors.map((e) => el("li", { class: "error" }, `${e.path}: ${e.message}`))),
    reprompt ? [el("div", { class: "muted" }, "Re-prompt that followed"), el("pre", { class: "reprompt" }, reprompt)] : "",
  );
}

function build(session, row, result, redraw, live) {
  const out = [];
  out.push(el("h1", {}, `Session: ${session.session_id}`));
  const facts = [
    ["Agent", link(`/agents/${pathPart(session.agent_name)}`, session.agent_name)],
    ["Status", badge(session.status)],
    ["Model", row.model || ""],
    ["Tokens", row.tokens === null ? "" : row.tokens.toLocaleString("en")],
    ["Duration", ms(row.duration_ms)],
    ["Created", when(session.created_at)],
  ];
  if (session.parent_session_id) facts.push(["Parent", link(`/sessions/${pathPart(session.parent_session_id)}`, session.parent_session_id)]);
  if (session.children.length) facts.push(["Children", el("span", {}, session.children.map((c, i) => [i ? ", " : "", link(`/sessions/${pathPart(c)}`, c)]))]);
  out.push(el("section", { class: "card" }, el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])), ...verdict(result, row)));

  if (result) {
    const failure = result.error;
    out.push(el("h2", {}, "Result"));
    if (result.status === "completed") out.push(el("pre", { "data-testid": "result" }, result.result_data !== null ? pretty(result.result_data) : result.result_text || ""));
    else if (failure) out.push(el("p", { class: "muted" }, "Last output"), el("pre", { "data-testid": "result" }, typeof failure.last_output === "string" ? failure.last_output : pretty(failure.last_output)));
  } else {
    out.push(el("p", { class: "notice" }, `The latest run is ${session.status}; this page updates when it ends.`));
    if (live.run !== null) {
      live.label = el("div", { class: "muted", "data-testid": "partial-note" });
      live.node = el("pre", { "data-testid": "partial-output" });
      out.push(el("h2", {}, "Output so far"), live.label, live.node);
    }
  }

  // Each claim of a run by a runner and how it ended (expired: the runner died or hung).
  const claimsBlock = (claims) => !claims || !claims.length ? "" :
    el("details", { "data-testid": "claims", open: claims.length > 1 },
      el("summary", {}, `Claims: ${claims.length}`),
      el("ul", {}, claims.map((claim) => el("li", {},
        `#${claim.number} by ${claim.runner} at ${when(claim.claimed_at)}: `,
        claim.ended ? `${claim.ended} at ${when(claim.ended_at)}` : "held"))));

  out.push(el("h2", {}, "Runs"));
  session.runs.forEach((run, index) => {
    const reprompts = row.reprompts[run.run_id] || [];
    out.push(el("section", { class: "card" },
      el("h3", {}, `Run ${index + 1}: ${run.type}`, " ", badge(run.status), el("span", { class: "muted" }, ` ${run.run_id}`)),
      el("div", { class: "muted" }, "Prompt"),
      el("pre", {}, run.prompt),
      run.attempts.map((attempt, i) => attemptBlock(attempt, reprompts[i])),
      run.error && run.error.type !== "output_schema_validation_failed" ? el("p", { class: "bad-text" }, `${run.error.type}: ${run.error.message}`) : "",
      run.error && run.error.where ? el("p", { class: "muted" }, `Where: ${run.error.where}`) : "",
      claimsBlock(run.claim_history),
    ));
  });

  const prompt = el("textarea", { id: "resume-prompt", rows: "3", required: true });
  const status = el("div", { "aria-live": "polite" });
  const busy = ["queued", "running"].includes(session.status);
  const form = el("form", { class: "card", "aria-labelledby": "resume-title" },
    el("h2", { id: "resume-title" }, "Resume this session"),
    el("label", { for: "resume-prompt" }, "Prompt", el("span", { class: "hint" }, "The conversation continues; the contract is enforced again.")),
    prompt,
    el("div", { class: "actions" }, el("button", { type: "submit", disabled: busy }, "Resume")),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api("/runs", { method: "POST", body: { type: "resume_session", session_id: session.session_id, prompt: prompt.value, stream: true } });
      status.replaceChildren(el("span", { class: "ok-text" }, "Resumed; waiting for the run…"));
      await redraw();
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  });
  out.push(form);
  out.push(deleteForm(session, busy));
  return out;
}

// Delete the session with its runs (and its child sessions); refused while a run goes on.
function deleteForm(session, busy) {
  const status = el("div", { "aria-live": "polite" });
  const children = session.children.length;
  const also = children ? ` and its ${children} child session${children === 1 ? "" : "s"}` : "";
  const button = el("button", { type: "submit", class: "danger", disabled: busy }, "Delete");
  const form = el("form", { class: "card", "aria-labelledby": "delete-title" },
    el("h2", { id: "delete-title" }, "Delete this session"),
    el("p", { class: "muted" }, `Its runs, attempts and events${also} are deleted for good.`,
      busy ? " A run is going on: delete the session after it ends." : ""),
    el("div", { class: "actions" }, button),
    status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!confirm(`Delete the session ${session.session_id}${also}?`)) return;
    try {
      await api(`/sessions/${pathPart(session.session_id)}`, { method: "DELETE" });
      location.assign("/sessions");
    } catch (error) {
      status.replaceChildren(errorBox(error));
    }
  });
  return form;
}
