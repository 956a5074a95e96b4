// The dashboard's core: the API client (with the bearer token), safe DOM building, the router.
// Everything a model or a user wrote is put on the page as text (textContent), never as HTML.

const TOKEN_KEY = "agentshape.token";

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

class NeedToken extends Error {}

let refused = false; // the last token given was answered with 401

// Call the service's JSON API; throws ApiError with the one error body on failure.
export async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
  });
  if (response.status === 401) {
    refused = Boolean(token);
    sessionStorage.removeItem(TOKEN_KEY);
    throw new NeedToken();
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { message: text };
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// Follow a server-sent event stream with the token (EventSource cannot send headers).
export function follow(path, onEvent, signal) {
  let stopped = false;
  signal.addEventListener("abort", () => (stopped = true));
  (async () => {
    let last = null; // the id of the last event: a reconnect continues from it
    while (!stopped) {
      let pause = 2000;
      try {
        const headers = { Accept: "text/event-stream" };
        const token = sessionStorage.getItem(TOKEN_KEY);
        if (token) headers.Authorization = `Bearer ${token}`;
        const url = last === null ? path : `${path}${path.includes("?") ? "&" : "?"}after=${encodeURIComponent(last)}`;
        const response = await fetch(url, { headers, signal });
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut;
          while ((cut = buffer.indexOf("\n\n")) >= 0) {
            const block = buffer.slice(0, cut);
            buffer = buffer.slice(cut + 2);
            let type = "message";
            const data = [];
            for (const line of block.split("\n")) {
              if (line.startsWith("event:")) type = line.slice(6).trim();
              else if (line.startsWith("id:")) last = line.slice(3).trim();
              else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
            }
            if (data.length) onEvent(type, JSON.parse(data.join("\n")));
          }
        }
        pause = 0; // the server ended the stream on time: reconnect at once
      } catch (error) {
        if (stopped) return;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  })();
}

// Build an element: el("a", {href: "/x", class: "c"}, "text", child...). Strings become text.
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (key === "class") node.className = value;
    else if (value === true) node.setAttribute(key, "");
    else node.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// "1 session", "2 sessions"; with `more` ("+": a lower bound) always plural: "10,000+ sessions".
export function plural(count, noun, more = "") {
  return `${count.toLocaleString("en")}${more} ${noun}${count === 1 && !more ? "" : "s"}`;
}

export function link(href, text) {
  return el("a", { href }, text);
}

export function pathPart(text) {
  return encodeURIComponent(text);
}

export function pretty(value) {
  return JSON.stringify(value, null, 2);
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return date.toISOString().replace("T", " ").slice(0, 19) + "Z";
}

export function ms(value) {
  if (value === null || value === undefined) return "";
  return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;
}

export function badge(status) {
  return el("span", { class: `badge ${status}` }, status);
}

// Show an API error (with every detail) as a message block.
export function errorBox(error) {
  const body = error instanceof ApiError ? error.body : {};
  const box = el("div", { class: "error", role: "alert" });
  box.append(el("strong", {}, body.error || "Error"), ": ", error.message);
  if (Array.isArray(body.details) && body.details.length) {
    box.append(el("ul", {}, body.details.map((d) => el("li", {}, `${d.path}: ${d.message}`))));
  }
  return box;
}

export function setTitle(text) {
  document.title = `${text} · agentshape`;
}

const routes = [
  [/^\/$/, "home"],
  [/^\/agents\/?$/, "agents"],
  [/^\/agents\/([^/]+)\/?$/, "agent"],
  [/^\/sessions\/?$/, "sessions"],
  [/^\/sessions\/([^/]+)\/?$/, "session"],
  [/^\/runs\/new\/?$/, "run"],
  [/^\/schemas\/?$/, "schemas"],
  [/^\/batches\/?$/, "batches"],
  [/^\/analytics\/?$/, "analytics"],
  [/^\/evals\/?$/, "evals"],
];

function askToken(main, again) {
  main.replaceChildren();
  setTitle("Token");
  const input = el("input", {
    id: "token",
    type: "password",
    autocomplete: "off",
    required: true,
  });
  const form = el(
    "form",
    { class: "card narrow", "aria-labelledby": "token-title" },
    el("h1", { id: "token-title" }, "This service needs a token"),
    el("p", {}, "Give the bearer token the service was started with (", el("code", { class: "nowrap" }, "--token"), "). It is kept in this tab only."),
    refused ? el("p", { class: "error", role: "alert" }, "The service refused that token; try again.") : "",
    el("label", { for: "token" }, "Token"),
    input,
    el("div", { class: "actions" }, el("button", { type: "submit" }, "Continue")),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    again();
  });
  main.append(form);
  input.focus();
}

let current = null;

async function render() {
  const main = document.getElementById("main");
  const path = location.pathname;
  if (current) current.abort();
  current = new AbortController();
  for (const a of document.querySelectorAll("header nav a")) {
    const active = path === a.getAttribute("href") || path.startsWith(a.getAttribute("href") + "/");
    if (active) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const found = routes.find(([pattern]) => pattern.test(path));
  if (!found) {
    main.replaceChildren(el("h1", {}, "Not found"), el("p", {}, "No such page."));
    return;
  }
  const params = path.match(found[0]).slice(1).map(decodeURIComponent);
  const view = el("div", { class: "view" });
  try {
    const page = await import(`./pages/${found[1]}.js`);
    await page.render(view, params, current.signal);
    main.replaceChildren(view);
  } catch (error) {
    if (error instanceof NeedToken) askToken(main, render);
    else if (error.name !== "AbortError") main.replaceChildren(errorBox(error));
  }
}

render();
