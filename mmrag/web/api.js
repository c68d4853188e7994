// Every request of the page goes through here: the API key (session storage only), error bodies,
// 401 -> ask for a key and retry, 429 -> Retry-After in the message, SSE read from fetch streams
// (EventSource cannot send an Authorization header, and answers are a POST).

const KEY_STORE = "mmrag.apiKey";
let askForKey = null; // async (reason) => key | null, installed by the app

export class ApiError extends Error {
  constructor(status, code, message, retryAfter = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

export function setKeyPrompt(fn) { askForKey = fn; }
export function apiKey() { return sessionStorage.getItem(KEY_STORE); }
export function setApiKey(key) {
  if (key) sessionStorage.setItem(KEY_STORE, key); else sessionStorage.removeItem(KEY_STORE);
}

function headers(extra = {}) {
  const h = { ...extra };
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

export async function errorOf(response) {
  let code = `http_${response.status}`;
  let message = `${response.status} ${response.statusText}`;
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (body && typeof body === "object") {
      code = body.error || code;
      message = body.message || (body.errors && body.errors.map((e) => `${e.filename}: ${e.message}`).join("; "))
        || message;
    }
  } catch { if (text) message = text.slice(0, 500); }
  const retry = response.headers.get("Retry-After");
  if (response.status === 429) message += retry ? ` Retry after ${retry} s.` : " Try again later.";
  return new ApiError(response.status, code, message, retry ? Number(retry) : null);
}

// fetch with the key; on 401 ask once for a key and retry. Returns the Response (any status) so
// that callers that need the body of an error (upload) can read it; `call` throws instead.
export async function send(method, path, { json, form, signal } = {}) {
  for (let attempt = 0; ; attempt++) {
    const init = { method, signal, headers: headers(json !== undefined ? { "Content-Type": "application/json" } : {}) };
    if (json !== undefined) init.body = JSON.stringify(json);
    if (form) init.body = form;
    const response = await fetch(path, init);
    if (response.status !== 401 || attempt > 0 || !askForKey) return response;
    const reason = (await errorOf(response)).message;
    const key = await askForKey(reason);
    if (!key) return new Response(JSON.stringify({ error: "unauthorized", message: reason }),
      { status: 401, headers: { "Content-Type": "application/json" } });
    setApiKey(key);
  }
}

export async function call(method, path, options) {
  const response = await send(method, path, options);
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204) return null;
  const type = response.headers.get("Content-Type") || "";
  return type.includes("json") ? response.json() : response;
}

// The one place a corpus's URL is built: corpusPath("docs", "/search") -> "/corpora/docs/search".
export const corpusPath = (name, rest = "") => `/corpora/${encodeURIComponent(name)}${rest}`;

export const get = (path) => call("GET", path);
export const post = (path, json) => call("POST", path, { json });
export const del = (path) => call("DELETE", path);

// Server-sent events from a streaming Response: yields {event, data} with data parsed as JSON.
export async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { event, data: JSON.parse(data.join("\n")) };
    }
  }
}

// Images are fetched with the key and shown as blob: URLs (an <img src> cannot carry headers).
const blobs = new Map();
export function imageURL(path) {
  if (!blobs.has(path)) {
    const promise = call("GET", path).then(async (r) => URL.createObjectURL(await r.blob()));
    promise.catch(() => blobs.delete(path));
    blobs.set(path, promise);
  }
  return blobs.get(path);
}
