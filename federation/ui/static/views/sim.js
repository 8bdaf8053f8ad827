// Simulator results: open the jobs.csv and metrics.json that `fedq simulate --output-dir DIR` wrote
// and draw the plots of `--plot` (utilization, per-tenant share against fair share, waits), interactive.
// The files are read in the browser: nothing is uploaded, and no token is needed to look at them.
import { chart, PALETTE } from "../chart.js";
import { h, number, status, table } from "../dom.js";

const TOP_TENANTS = 8; // as federation/simulator/plots.py: the rest are summed
const OTHERS = "(other tenants)";

export function parseCsv(text) {
  const rows = [];
  let row = [];
  let field = "";
  let quoted = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (field += '"'), (i += 1);
      else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ",") row.push(field), (field = "");
    else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i += 1;
      row.push(field), rows.push(row), (row = []), (field = "");
    } else field += c;
  }
  if (field || row.length) row.push(field), rows.push(row);
  const [header, ...body] = rows;
  return body.filter((r) => r.length === header.length).map((r) => Object.fromEntries(header.map((k, i) => [k, r[i]])));
}

export function jobsOf(rows) {
  return rows.map((r) => ({
    id: r.id,
    tenant: r.tenant,
    submit: Number(r.submit),
    start: r.start === "" ? null : Number(r.start),
    end: r.end === "" ? null : Number(r.end),
    state: r.state,
    resources: Object.fromEntries((r.resources || "").split(";").filter(Boolean).map((p) => p.split("=")).map(([k, v]) => [k, Number(v)])),
  }));
}

function binned(intervals, edges) {
  // For each bin, the integral over it of the amounts of the intervals covering each instant.
  const out = new Array(edges.length - 1).fill(0);
  const lo = edges[0];
  const width = edges[1] - edges[0];
  for (const [start, end, amount] of intervals) {
    if (!amount || end <= start) continue;
    const first = Math.max(0, Math.floor((start - lo) / width));
    const last = Math.min(out.length - 1, Math.floor((end - lo) / width));
    for (let b = first; b <= last; b += 1) out[b] += amount * Math.max(0, Math.min(end, edges[b + 1]) - Math.max(start, edges[b]));
  }
  return out;
}

function timeUnit(span) {
  if (span >= 3 * 86400) return [86400, "days"];
  if (span >= 2 * 3600) return [3600, "hours"];
  return [1, "seconds"];
}

export function plots(jobs, metrics, bins, prefix = "sim") {
  const ran = jobs.filter((j) => j.start !== null && j.end !== null);
  if (!ran.length) return [h("p", {}, "No job ran: there is nothing to plot.")];
  const lo = Math.min(...ran.map((j) => j.submit));
  const hi = Math.max(Math.max(...ran.map((j) => j.end)), lo + 1);
  const edges = Array.from({ length: bins + 1 }, (_, i) => lo + ((hi - lo) * i) / bins);
  const [scale, unit] = timeUnit(hi - lo);
  const x = (t) => t / scale;
  const capacity = metrics.capacity || {};
  const out = [];

  if (Object.keys(capacity).length) {
    const series = [];
    for (const [res, cap] of Object.entries(capacity).sort()) {
      if (cap <= 0) continue;
      const used = binned(ran.map((j) => [j.start, j.end, j.resources[res] || 0]), edges);
      const pct = used.map((u, b) => [x(edges[b]), (100 * u) / (cap * (edges[b + 1] - edges[b]))]);
      const mean = (100 * used.reduce((a, b) => a + b, 0)) / (cap * (hi - lo));
      series.push({ name: `${res} (capacity ${number(cap)})`, step: true, points: [...pct, [x(hi), pct[pct.length - 1][1]]] });
      series.push({ name: `${res} mean ${number(mean)} %`, dashed: true, points: [[x(lo), mean], [x(hi), mean]] });
    }
    out.push(chart({ id: `${prefix}-utilization`, title: "Federation utilization over time", xLabel: `time since scenario start (${unit})`, yLabel: "resources in use (%)", series, yMax: 105 }));

    const dominant = (r) => Math.max(0, ...Object.entries(r).filter(([k]) => capacity[k] > 0).map(([k, v]) => v / capacity[k]));
    const byTenant = {};
    for (const j of ran) (byTenant[j.tenant] ??= []).push([j.start, j.end, dominant(j.resources)]);
    const per = Object.fromEntries(Object.entries(byTenant).map(([t, iv]) => [t, binned(iv, edges)]));
    const sum = (xs) => xs.reduce((a, b) => a + b, 0);
    const ranked = Object.keys(per).sort((a, b) => sum(per[b]) - sum(per[a]) || (a < b ? -1 : 1));
    const shown = ranked.slice(0, TOP_TENANTS);
    if (ranked.length > TOP_TENANTS) {
      per[OTHERS] = edges.slice(1).map((_, b) => sum(ranked.slice(TOP_TENANTS).map((t) => per[t][b])));
      shown.push(OTHERS);
    }
    const totals = edges.slice(1).map((_, b) => sum(ranked.map((t) => per[t][b])));
    const series2 = [];
    shown.forEach((t, i) => {
      const color = PALETTE[i % PALETTE.length];
      const share = per[t].map((u, b) => [x(edges[b]), totals[b] > 0 ? (100 * u) / totals[b] : NaN]);
      series2.push({ name: t, color, step: true, points: [...share, [x(hi), share[share.length - 1][1]]] });
      const fair = metrics.tenants?.[t]?.fair_share;
      if (fair !== undefined) series2.push({ name: `${t} fair share`, color, dashed: true, points: [[x(lo), 100 * fair], [x(hi), 100 * fair]] });
    });
    out.push(chart({ id: `${prefix}-shares`, title: "Per-tenant share of used resources (dashed: fair share)", xLabel: `time since scenario start (${unit})`, yLabel: "share of usage in the slice (%)", series: series2, yMax: 105 }));
  } else {
    out.push(h("p", { class: "hint" }, "metrics.json has no capacity (written by an older fedq): utilization and shares cannot be drawn."));
  }

  const started = jobs.filter((j) => j.start !== null);
  const waits = started.map((j) => j.start - j.submit).sort((a, b) => a - b);
  const cdf = waits.map((w, i) => [Math.max(w, 1), (100 * (i + 1)) / waits.length]);
  out.push(chart({ id: `${prefix}-waits`, title: "Wait time distribution", xLabel: "wait (s, log scale; < 1 s shown at 1 s)", yLabel: "jobs waiting at most this long (%)", series: [{ name: "jobs", step: true, points: cdf }], logX: true, yMax: 101 }));
  out.push(meanWaitChart(started, bins, prefix));
  return out;
}

const WAIT_UNITS = [[3600, "h"], [60, "min"], [1, "s"]];
const JOBS_PER_SLICE = 5; // fewer and a slice's mean is one job's wait; more slices are mostly empty

export function meanWaits(started, bins) {
  // Jobs by submit time in slices of about JOBS_PER_SLICE jobs each (at most `bins`): each slice's mean
  // wait from its start (NaN: none was submitted in it), in the largest unit the longest mean reaches
  // twice (s, min or h), and the last slice's end.
  const slo = Math.min(...started.map((j) => j.submit));
  const shi = Math.max(...started.map((j) => j.submit));
  const slices = Math.max(1, Math.min(bins, Math.ceil(started.length / JOBS_PER_SLICE)));
  const width = (shi - slo) / slices || 1;
  const sums = new Array(slices).fill(0);
  const counts = new Array(slices).fill(0);
  for (const j of started) {
    const b = Math.min(Math.floor((j.submit - slo) / width), slices - 1);
    sums[b] += j.start - j.submit;
    counts[b] += 1;
  }
  const means = sums.map((s, b) => [slo + b * width, counts[b] ? s / counts[b] : NaN]);
  const longest = Math.max(0, ...means.map(([, m]) => m).filter(Number.isFinite));
  const [size, unit] = WAIT_UNITS.find(([u]) => longest >= 2 * u) || WAIT_UNITS[WAIT_UNITS.length - 1];
  const points = means.map(([t, m]) => [t, m / size]);
  return { slo, shi, slices, unit, points: [...points, [slo + slices * width, points[points.length - 1][1]]] };
}

function meanWaitChart(started, bins, prefix) {
  const { slo, shi, slices, unit, points } = meanWaits(started, bins);
  const [scale, tunit] = timeUnit(shi - slo);
  const series = [{ name: `mean wait (${slices} slices)`, step: true, points: points.map(([t, m]) => [t / scale, m]) }];
  return chart({ id: `${prefix}-mean-wait`, title: "Mean wait of the jobs submitted in each slice", xLabel: `submit time since scenario start (${tunit})`, yLabel: `mean wait (${unit})`, series });
}

function summary(metrics) {
  const keys = ["jobs", "started", "completed", "failed", "rejected", "unschedulable", "mean_wait", "p95_wait", "max_wait", "mean_bounded_slowdown", "makespan", "jain_fairness"];
  const rows = keys.filter((k) => k in metrics).map((k) => [k, typeof metrics[k] === "number" ? number(metrics[k]) : String(metrics[k] ?? "—")]);
  for (const [res, u] of Object.entries(metrics.utilization || {})) rows.push([`utilization ${res}`, u === null ? "—" : `${number(100 * u)} %`]);
  const tenants = Object.entries(metrics.tenants || {}).map(([t, m]) => ({ attrs: { dataset: { tenant: t } }, cells: [t, String(m.jobs), String(m.completed), number(m.mean_wait), number(m.p95_wait), m.usage_share === null ? "—" : `${number(100 * m.usage_share)} %`, `${number(100 * m.fair_share)} %`] }));
  return [
    table([{ label: "Metric" }, { label: "Value" }], rows, { class: "metrics", "aria-label": "Simulation metrics" }),
    table(["Tenant", "Jobs", "Completed", "Mean wait (s)", "P95 wait (s)", "Usage share", "Fair share"].map((label) => ({ label })), tenants, { "aria-label": "Per tenant" }),
  ];
}

// A what-if (`fedq whatif --output-dir DIR`): whatif.json beside baseline/ and candidate/, each a
// `fedq simulate` output. Per tenant and per queue, the two runs side by side with the change; with the
// directory opened, each run's plots next to the other's.
const RUNS = ["baseline", "candidate"];
const STATS = [
  ["mean_wait", "Mean wait (s)"],
  ["p95_wait", "P95 wait (s)"],
  ["mean_bounded_slowdown", "Bounded slowdown"],
  ["usage_share", "Usage share", true],
  ["fair_share", "Fair share", true],
  ["preempted", "Preempted"],
];

function shown(value, percent) {
  if (value === null || value === undefined) return "—";
  return percent ? `${number(100 * value)} %` : number(value);
}

function signed(value, percent) {
  if (value === null || value === undefined) return "";
  const text = shown(value, percent);
  return value > 0 ? `+${text}` : text;
}

export function sideBySide(groups, label) {
  const rows = Object.entries(groups).map(([name, g]) => ({
    attrs: { dataset: { group: name } },
    cells: [
      name,
      String(g.baseline.jobs),
      ...STATS.map(([key, , percent]) =>
        h("span", { dataset: { stat: key } }, `${shown(g.baseline[key], percent)} → ${shown(g.candidate[key], percent)}`, h("small", { class: "change" }, ` ${signed(g.change[key], percent)}`)),
      ),
    ],
  }));
  return table([{ label }, { label: "Jobs" }, ...STATS.map(([, title]) => ({ label: title }))], rows, { "aria-label": `What-if per ${label.toLowerCase()}` });
}

function whatifSummary(result) {
  const f = result.fidelity || {};
  const changes = (result.changes || []).join(", ") || "none";
  return [
    h("h2", {}, `What-if on the jobs since ${result.window ? new Date(1000 * result.window.since).toLocaleString() : "?"}: changed ${changes}`),
    h("p", { class: "hint" }, "Each cell: baseline → candidate, then the change."),
    h(
      "p",
      { id: "whatif-fidelity" },
      `The baseline replays what happened with start errors of median ${shown(f.median)} s, p90 ${shown(f.p90)} s, max ${shown(f.max)} s over ${f.compared ?? 0} jobs `,
      `(the scheduling interval is ${shown(result.cycle_period)} s): trust differences larger than that.`,
    ),
    sideBySide(result.tenants || {}, "Tenant"),
    sideBySide(result.queues || {}, "Queue"),
  ];
}

async function runOf(files) {
  if (!files["jobs.csv"] || !files["metrics.json"]) return null;
  return { jobs: jobsOf(parseCsv(await files["jobs.csv"].text())), metrics: JSON.parse(await files["metrics.json"].text()) };
}

export async function simulatorView({ root }) {
  const out = h("div", { id: "sim-results" });
  let loaded = null;
  const binsSelect = h("select", { id: "sim-bins", onchange: () => loaded && draw() }, [50, 100, 200].map((n) => h("option", { value: n, selected: n === 200 }, String(n))));
  const draw = () => {
    const bins = Number(binsSelect.value);
    if (loaded.whatif) {
      const columns = RUNS.filter((run) => loaded.runs[run]).map((run) => h("div", { class: "whatif-run", dataset: { run } }, h("h3", {}, run), ...plots(loaded.runs[run].jobs, loaded.runs[run].metrics, bins, `${run}`)));
      out.replaceChildren(...whatifSummary(loaded.whatif), ...(columns.length ? [h("div", { class: "whatif-runs" }, columns)] : []));
      return;
    }
    out.replaceChildren(h("h2", {}, loaded.name), ...summary(loaded.metrics), ...plots(loaded.jobs, loaded.metrics, bins));
  };
  const open = async (files) => {
    const byName = Object.fromEntries([...files].map((f) => [f.name, f]));
    if (byName["whatif.json"]) {
      const byRun = Object.fromEntries(RUNS.map((run) => [run, {}]));
      for (const f of files) {
        const parts = f.webkitRelativePath.split("/");
        if (parts.length >= 2 && RUNS.includes(parts[parts.length - 2])) byRun[parts[parts.length - 2]][f.name] = f;
      }
      const runs = Object.fromEntries(await Promise.all(RUNS.map(async (run) => [run, await runOf(byRun[run])])));
      loaded = { whatif: JSON.parse(await byName["whatif.json"].text()), runs };
      draw();
      status(`what-if loaded${runs.baseline && runs.candidate ? " with both runs" : ": open its directory for the plots"}`);
      return;
    }
    if (!byName["jobs.csv"] || !byName["metrics.json"]) {
      status("Choose both jobs.csv and metrics.json (or their directory).");
      out.replaceChildren(h("p", { class: "error", role: "alert" }, "Both jobs.csv and metrics.json are needed."));
      return;
    }
    const jobs = jobsOf(parseCsv(await byName["jobs.csv"].text()));
    const metrics = JSON.parse(await byName["metrics.json"].text());
    const dir = byName["jobs.csv"].webkitRelativePath.split("/").slice(0, -1).join("/");
    loaded = { jobs, metrics, name: dir || "jobs.csv + metrics.json" };
    draw();
    status(`${jobs.length} simulated jobs loaded`);
  };
  root.append(
    h("h1", {}, "Simulator results"),
    h("p", {}, "Open what ", h("code", {}, "fedq simulate --output-dir DIR"), " wrote: its directory, or its jobs.csv and metrics.json; or what ", h("code", {}, "fedq whatif --output-dir DIR"), " wrote (its directory, or its whatif.json) to see both runs side by side. The files are read in this browser, not uploaded."),
    h(
      "form",
      { class: "filters", onsubmit: (e) => e.preventDefault() },
      h("label", { for: "sim-dir" }, "Directory"),
      h("input", { id: "sim-dir", type: "file", webkitdirectory: true, onchange: (e) => open(e.target.files) }),
      h("label", { for: "sim-files" }, "or files"),
      h("input", { id: "sim-files", type: "file", multiple: true, accept: ".csv,.json", onchange: (e) => open(e.target.files) }),
      h("label", { for: "sim-bins" }, "Time bins"),
      binsSelect,
    ),
    out,
  );
}
