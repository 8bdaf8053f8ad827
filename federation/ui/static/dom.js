// Small DOM and formatting helpers shared by the views. Text always goes in as text nodes, never as HTML.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function svg(tag, attrs = {}, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== undefined && value !== null) el.setAttribute(key, String(value));
  }
  for (const child of children.flat(Infinity)) if (child) el.append(child);
  return el;
}

export function number(value, digits = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString("en");
  return String(Number(value.toPrecision(digits)));
}

const BINARY = [["Ti", 2 ** 40], ["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];

export function quantity(name, amount) {
  // Kubernetes-style quantities, as the CLI prints them (cpu=500m, memory=256Mi).
  if (name === "memory" || name.endsWith("storage")) {
    for (const [suffix, size] of BINARY) if (amount >= size) return `${number(amount / size)}${suffix}`;
    return number(amount);
  }
  if (name === "cpu" && amount > 0 && amount < 1) return `${Math.round(amount * 1000)}m`;
  return number(amount);
}

export function resources(amounts) {
  const names = Object.keys(amounts || {}).sort();
  if (!names.length) return "—";
  return names.map((name) => `${name}=${quantity(name, amounts[name])}`).join(", ");
}

export function labels(pairs) {
  const keys = Object.keys(pairs || {}).sort();
  return keys.length ? keys.map((k) => `${k}=${pairs[k]}`).join(", ") : "—";
}

export function duration(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  const s = Math.abs(seconds);
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${Math.round(s % 60) ? `${Math.round(s % 60)}s` : ""}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.round((s % 3600) / 60) ? `${Math.round((s % 3600) / 60)}m` : ""}`;
  return `${Math.floor(s / 86400)}d${Math.round((s % 86400) / 3600) ? `${Math.round((s % 86400) / 3600)}h` : ""}`;
}

export function when(epoch) {
  // ISO 8601 in the browser's zone with how far off it is, as the CLI shows times.
  if (!epoch) return "—";
  const date = new Date(epoch * 1000);
  const offset = -date.getTimezoneOffset();
  const pad = (n) => String(Math.floor(Math.abs(n))).padStart(2, "0");
  const local = new Date(date.getTime() + offset * 60000).toISOString().slice(0, 19);
  const zone = `${offset >= 0 ? "+" : "-"}${pad(offset / 60)}:${pad(offset % 60)}`;
  const delta = epoch - Date.now() / 1000;
  return `${local}${zone} (${delta >= 0 ? "in " : ""}${duration(delta)}${delta < 0 ? " ago" : ""})`;
}

export function shortWhen(epoch) {
  // A table's time on one line: "12-03 15:44" in the browser's zone, the full time in its tooltip.
  if (!epoch) return "—";
  const date = new Date(epoch * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  const text = `${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}`;
  return h("time", { datetime: date.toISOString(), title: when(epoch) }, text);
}

const GIB = 2 ** 30;

function hoursNumber(value) {
  // As federation/reports/render.py writes usage: 0.76, 3.1, 12.4, 184, 12,346; below 0.01, "<0.01".
  const size = Math.abs(value);
  if (size === 0) return "0";
  if (size < 0.01) return "<0.01";
  if (size >= 100) return Math.round(value).toLocaleString("en");
  return String(Number(value.toFixed(size < 10 ? 2 : 1)));
}

export function usageHours(hours) {
  // Resource-hours in plain units: "12.4 cpu-h, 3.1 GiB-h, 2 gpu-h" (as `fedq report quota`).
  const names = Object.keys(hours || {}).sort();
  if (!names.length) return "—";
  const bytes = (name) => name === "ephemeral-storage" || name.endsWith("memory");
  const unit = (name) => (name === "memory" ? "GiB-h" : bytes(name) ? `${name} GiB-h` : name === "cpu" || name.endsWith("gpu") ? `${name.split("/").pop()}-h` : `${name}-h`);
  return names.map((name) => `${hoursNumber(hours[name] / (bytes(name) ? GIB : 1))} ${unit(name)}`).join(", ");
}

export function units(amounts, weights) {
  // Weighted units (fairshare.usageWeights), as the reports count them.
  let total = 0;
  for (const [name, amount] of Object.entries(amounts || {})) total += (weights[name] || 0) * amount;
  return total;
}

export function table(columns, rows, attrs = {}) {
  // columns: [{label, cls}]; rows: arrays of cells (node or text) or {cells, attrs}.
  return h(
    "div",
    { class: "scroll" },
    h(
      "table",
      attrs,
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col", class: c.cls }, c.label)))),
      h(
        "tbody",
        {},
        rows.map((row) => {
          const cells = Array.isArray(row) ? row : row.cells;
          return h(
            "tr",
            Array.isArray(row) ? {} : row.attrs,
            cells.map((cell, i) => h(i === 0 ? "th" : "td", { class: columns[i].cls, scope: i === 0 ? "row" : null }, cell)),
          );
        }),
      ),
    ),
  );
}

export function status(text) {
  document.getElementById("status").textContent = text;
}
