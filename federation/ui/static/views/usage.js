// Usage: the quota report (GET /v1/reports/quota, what `fedq report quota` prints) over a window, per
// tenant and (for an admin) per queue, with each tenant's usage against its fair share over time from
// the accounting history (`bins` of the report's series), and the report as CSV (format=csv).
import { api, download } from "../api.js";
import { chart, PALETTE } from "../chart.js";
import { h, number, resources, status, table, usageHours, when } from "../dom.js";

export const WINDOWS = ["1h", "6h", "1d", "7d", "30d"]; // as federation/reports/window.py
const SECONDS = { "1h": 3600, "6h": 21600, "1d": 86400, "7d": 604800, "30d": 2592000 };
// [label, shown without "every column"]: the compact set is `fedq report quota`'s (-o wide for the rest).
const TENANT_COLUMNS = [["Tenant", true], ["Guarantee", false], ["Cap", false], ["Allocated", true], ["Share", true], ["Window share", false], ["Fair share", true], ["Borrowed", false], ["Lent", false], ["RUP", false], ["EUP", true], ["Factor", false], ["Usage", true], ["Run", true], ["Pend", true], ["Done", false], ["Fail", false], ["Wait p50", true], ["Wait p95", false]];
const NUMERIC = new Set(["Share", "Window share", "Fair share", "RUP", "EUP", "Factor", "Run", "Pend", "Done", "Fail", "Wait p50", "Wait p95"]);
export const BINS = 60;
const pct = (v) => (v === null || v === undefined || Number.isNaN(v) ? "—" : `${number(100 * v)} %`);

function series(report) {
  // Per tenant: average units in use per bin, then the report's "now" (allocated units) as the last
  // point; its fair share as it was at each bin edge (dashed), then its fair share now. The same for
  // shares of the federation's usage.
  const { edges, tenants, total, fair_share: fair, fair_share_units: fairUnits } = report.series;
  const end = report.until;
  const used = [];
  const shares = [];
  report.tenants.forEach((row, i) => {
    const color = PALETTE[i % PALETTE.length]; // a tenant's fair share is dashed in its own colour
    const per = tenants[row.tenant] || [];
    const then = (values, scale) => (values?.[row.tenant] || []).slice(0, -1).map((v, e) => [edges[e], scale * v]);
    const points = per.map((u, b) => [edges[b], u / (edges[b + 1] - edges[b])]);
    used.push({ name: row.tenant, color, step: true, points: [...points, [end, row.allocated_units]] });
    used.push({ name: `${row.tenant} fair share`, color, dashed: true, points: [...then(fairUnits, 1), [end, row.fair_share_units]] });
    const share = per.map((u, b) => [edges[b], total[b] > 0 ? (100 * u) / total[b] : NaN]);
    shares.push({ name: row.tenant, color, step: true, points: [...share, [end, 100 * row.share_now]] });
    shares.push({ name: `${row.tenant} fair share`, color, dashed: true, points: [...then(fair, 100), [end, 100 * row.fair_share]] });
  });
  return { used, shares };
}

export async function usageView({ root, me, arg, signal }) {
  const params = new URLSearchParams(arg);
  // No window chosen: the server's "auto", the smallest that holds the recorded usage.
  let since = WINDOWS.includes(params.get("since")) ? params.get("since") : "auto";
  const tenant = me.role === "admin" ? params.get("tenant") || "" : "";
  const queue = me.role === "admin" ? params.get("queue") || "" : "";
  const query = { since, tenant, queue };
  const wide = params.get("columns") === "all"; // the table's every column, not only the compact set
  const go = (changes) => {
    const next = new URLSearchParams({ ...query, columns: wide ? "all" : "", ...changes });
    for (const [key, value] of [...next]) if (!value) next.delete(key);
    location.hash = `#/usage/${next.toString()}`;
  };

  const picker = h(
    "fieldset",
    { class: "windows" },
    h("legend", {}, "Window"),
    WINDOWS.map((w) => h("label", {}, h("input", { type: "radio", name: "window", value: w, checked: w === since, onchange: () => go({ since: w }) }), ` ${w}`)),
  );
  const filters = h("form", { class: "filters", onsubmit: (e) => e.preventDefault() }, picker);
  if (me.role === "admin") {
    filters.append(
      h("label", { for: "u-tenant" }, "Tenant"),
      h("input", { id: "u-tenant", value: tenant, onchange: (e) => go({ tenant: e.target.value.trim() }) }),
      h("label", { for: "u-queue" }, "Queue subtree"),
      h("input", { id: "u-queue", value: queue, onchange: (e) => go({ queue: e.target.value.trim() }) }),
    );
  }
  const csv = h("button", { type: "button", id: "csv", onclick: () => download("/v1/reports/quota", { ...query, format: "csv" }, `quota-${since}.csv`).then(() => status("CSV saved")) }, "Download CSV");
  filters.append(csv);
  const body = h("div", {});
  root.append(h("h1", {}, "Usage"), filters, body);

  const report = await api("/v1/reports/quota", { params: { ...query, bins: BINS }, signal });
  if (since === "auto") {
    since = WINDOWS.find((w) => SECONDS[w] === Math.round(report.until - report.since)) || since;
    for (const radio of picker.querySelectorAll("input")) radio.checked = radio.value === since;
    query.since = since;
  }
  const { used, shares } = series(report);
  const all = TENANT_COLUMNS.map(([label]) => ({ label, cls: NUMERIC.has(label) ? "num" : undefined }));
  const keep = TENANT_COLUMNS.map(([, compact]) => wide || compact);
  const columns = all.filter((_, i) => keep[i]);
  const rows = report.tenants.map((r) => ({
    attrs: { dataset: { tenant: r.tenant } },
    cells: [r.tenant, resources(r.guarantee), resources(r.cap), `${number(r.allocated_units)} (${resources(r.allocated)})`, pct(r.share_now), pct(r.share_window), pct(r.fair_share), resources(r.borrowed), resources(r.lent), number(r.real_priority), number(r.effective_priority), number(r.priority_factor), usageHours(r.resource_hours), String(r.running), String(r.pending), String(r.completed), String(r.failed), r.wait_p50 === null ? "—" : `${number(r.wait_p50)} s`, r.wait_p95 === null ? "—" : `${number(r.wait_p95)} s`].filter((_, i) => keep[i]),
  }));
  const toggle = h("label", {}, h("input", { type: "checkbox", id: "u-wide", checked: wide, onchange: (e) => go({ columns: e.target.checked ? "all" : "" }) }), " every column");
  body.append(
    h("p", {}, `${when(report.since)} to ${when(report.until)}: ${number(report.allocated_units)} of ${number(report.capacity_units)} units allocated now.`),
    toggle,
    table(columns, rows, { class: "usage", "aria-label": "Usage per tenant" }),
    chart({ id: "usage-chart", title: "In use per tenant (average units per bin; the last point is now) against fair share (dashed)", xLabel: "time (UTC)", yLabel: "units", series: used, time: true }),
    chart({ id: "share-chart", title: "Share of the federation's usage (the last point is now) against fair share (dashed)", xLabel: "time (UTC)", yLabel: "%", series: shares, time: true, yMax: 105 }),
  );
  if (report.queues.length) {
    const qcols = ["Queue", "Guarantee", "Cap", "Allocated", "Fair-share slice", "Borrowed", "Lent", "RUP", "EUP", "Usage", "Run", "Pend"].map((label) => ({ label, cls: NUMERIC.has(label) ? "num" : undefined }));
    const qrows = report.queues.map((q) => ({
      attrs: { dataset: { queue: q.queue } },
      cells: [q.queue || "(federation)", resources(q.guarantee), resources(q.cap), `${number(q.allocated_units)} (${resources(q.allocated)})`, number(q.fair_share_units), resources(q.borrowed), resources(q.lent), number(q.real_priority), number(q.effective_priority), usageHours(q.resource_hours), String(q.running), String(q.pending)],
    }));
    body.append(h("h2", {}, "Per queue"), table(qcols, qrows, { class: "usage-queues", "aria-label": "Usage per queue" }));
  }
}
