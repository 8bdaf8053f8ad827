// The page's one way to the server: the REST API with the token from this tab's sessionStorage as a
// bearer header (never in a URL), and the job event streams read from fetch's body (EventSource cannot
// send a header).

const KEY = "fedq.token";

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export const token = {
  get: () => sessionStorage.getItem(KEY),
  set: (value) => sessionStorage.setItem(KEY, value),
  clear: () => sessionStorage.removeItem(KEY),
};

function url(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") query.set(key, String(value));
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

async function send(path, { method = "GET", params, body, signal, accept = "application/json" } = {}) {
  if (!token.get()) throw new ApiError(401, "not logged in"); // logged out meanwhile: send nothing
  const headers = { Authorization: `Bearer ${token.get()}`, Accept: accept };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url(path, params), {
    method,
    headers,
    signal,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  });
  if (!response.ok) {
    let message = `${response.status} ${response.statusText}`;
    try {
      message = (await response.json()).error || message;
    } catch {
      // not JSON: keep the status line
    }
    throw new ApiError(response.status, message);
  }
  return response;
}

export async function api(path, options = {}) {
  return (await send(path, options)).json();
}

export async function text(path, options = {}) {
  return (await send(path, { ...options, accept: "text/csv" })).text();
}

let paths = null;

export async function hasRoute(path) {
  // Whether this server's OpenAPI document has a route, so the page never probes one that may not exist.
  if (paths === null) paths = Object.keys((await (await fetch("/openapi.json")).json()).paths || {});
  return paths.includes(path);
}

export function stream(path, params, onMessage, { signal, onState } = {}) {
  // Follow an SSE stream: each message to onMessage({event, id, data}); reconnect after the last id
  // read when the connection drops, until signal aborts.
  let last = null;
  const run = async () => {
    let wait = 500;
    while (!signal.aborted) {
      try {
        const query = last === null ? params : { ...params, since: last };
        const response = await send(path, { params: { ...query, watch: true }, signal, accept: "text/event-stream" });
        onState?.("live");
        wait = 500;
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        let message = { event: "message", data: [], id: null };
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let cut;
          while ((cut = buffer.indexOf("\n")) >= 0) {
            const line = buffer.slice(0, cut).replace(/\r$/, "");
            buffer = buffer.slice(cut + 1);
            if (line === "") {
              if (message.data.length) {
                if (message.id !== null) last = message.id;
                const data = JSON.parse(message.data.join("\n"));
                if (message.event === "error") throw new ApiError(data.status, data.error);
                onMessage({ event: message.event, id: message.id, data });
              }
              message = { event: "message", data: [], id: null };
            } else if (!line.startsWith(":")) {
              const colon = line.indexOf(":");
              const name = colon < 0 ? line : line.slice(0, colon);
              const field = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
              if (name === "event") message.event = field;
              else if (name === "data") message.data.push(field);
              else if (name === "id" && /^\d+$/.test(field)) message.id = Number(field);
            }
          }
        }
      } catch (error) {
        if (signal.aborted) return;
        if (error instanceof ApiError && error.status < 500 && error.status !== 429) {
          onState?.(`stopped: ${error.message}`);
          return;
        }
      }
      if (signal.aborted) return;
      onState?.("reconnecting");
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * 2, 10000);
    }
  };
  run();
}

export async function download(path, params, filename) {
  // A CSV from the API saved through a blob: the token stays in the header.
  const body = await text(path, { params });
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([body], { type: "text/csv" }));
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
