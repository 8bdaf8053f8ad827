// Jobs: one page at a time of GET /v1/jobs (limit and continue: never every job at once), filtered by
// state, queue subtree and tenant on the server and by text on the page, sortable by any column, and
// kept live by the listing's event stream (GET /v1/jobs?watch=true with the same filters). An array's
// waiting elements fold into one row as `fedq jobs` folds them (../folding.js), each fold with an
// expand control, and "Every element" shows them all (`fedq jobs --expand`).
import { api, stream } from "../api.js";
import { h, shortWhen, status } from "../dom.js";
import { foldArrays } from "../folding.js";

export const PAGE_SIZE = 50;
const MAX_READS = 5; // a filtered page may come back short while `continue` is set: read on, a few times
// Active jobs first, as squeue lists them: running, then waiting (held ones are Pending), then ended. The
// listing is paged in index key order, which sorts states by name (Cancelled first), so an unfiltered
// view reads one state's listing after another in this order.
export const STATES = ["Running", "Admitted", "Dispatched", "Pending", "Reserved", "Unschedulable", "Failed", "Cancelled", "Succeeded"];
const COLUMNS = [
  ["id", "Job"],
  ["name", "Name"],
  ["tenant", "Tenant"],
  ["queue", "Queue"],
  ["state", "State"],
  ["priority", "Priority"],
  ["submit_time", "Submitted"],
  ["cluster", "Cluster"],
  ["attempt", "Attempt"],
  ["reason", "Reason"],
];

function queuePaths(nodes, depth = 0, out = []) {
  for (const node of nodes) {
    out.push([node.path, `${"\u00a0\u00a0".repeat(depth)}${node.name}`]);
    queuePaths(node.children, depth + 1, out);
  }
  return out;
}

export async function jobsView({ root, me, arg, signal }) {
  const started = performance.now();
  const filters = new URLSearchParams(arg);
  const state = filters.get("state") || "";
  const queue = filters.get("queue") || "";
  const tenant = me.role === "admin" ? filters.get("tenant") || "" : "";
  const server = { state, queue, tenant };
  let sort = { key: filters.get("sort") || "", dir: filters.get("dir") === "desc" ? -1 : 1 };
  let search = "";
  let expandAll = false;
  const opened = new Set(); // the folded rows shown with their elements under them
  const stages = state ? [state] : STATES; // the listings read one after another
  const tokens = [{ stage: 0, cursor: null }]; // where each page read so far starts: page n at tokens[n]
  let pageIndex = 0;
  let items = [];
  let next = null;
  const fresh = new Set();

  const go = (changes) => {
    const params = new URLSearchParams({ state, queue, tenant, sort: sort.key, dir: sort.dir < 0 ? "desc" : "asc", ...changes });
    for (const [key, value] of [...params]) if (!value) params.delete(key);
    location.hash = `#/jobs/${params.toString()}`;
  };

  const stateSelect = h("select", { id: "f-state", onchange: (e) => go({ state: e.target.value }) }, h("option", { value: "" }, "any state"), STATES.map((s) => h("option", { value: s, selected: s === state }, s)));
  const queueSelect = h("select", { id: "f-queue", onchange: (e) => go({ queue: e.target.value }) }, h("option", { value: "" }, "every queue"));
  const searchBox = h("input", {
    id: "f-search",
    type: "search",
    placeholder: "id, name, reason…",
    oninput: (e) => {
      search = e.target.value.trim().toLowerCase();
      draw();
    },
  });
  const tenantBox =
    me.role === "admin"
      ? h("input", { id: "f-tenant", value: tenant, list: "tenants", onchange: (e) => go({ tenant: e.target.value.trim() }) })
      : null;
  const tenantList = h("datalist", { id: "tenants" });
  const live = h("span", { class: "live", dataset: { live: "connecting" } }, "connecting…");
  const tbody = h("tbody", {});
  const head = h("tr", {});
  const pager = h("div", { class: "pager" });
  const tableEl = h("table", { class: "jobs", "aria-label": "Jobs" }, h("thead", {}, head), tbody);
  root.append(
    h("h1", {}, "Jobs ", live),
    h(
      "form",
      { class: "filters", onsubmit: (e) => e.preventDefault(), "aria-label": "Filter jobs" },
      h("label", { for: "f-state" }, "State"),
      stateSelect,
      h("label", { for: "f-queue" }, "Queue subtree"),
      queueSelect,
      tenantBox ? [h("label", { for: "f-tenant" }, "Tenant"), tenantBox, tenantList] : null,
      h("label", { for: "f-search" }, "Search this page"),
      searchBox,
      h("label", { for: "f-expand" }, "Every element"),
      h("input", { id: "f-expand", type: "checkbox", onchange: (e) => { expandAll = e.target.checked; draw(); } }),
    ),
    h("div", { class: "scroll" }, tableEl),
    pager,
  );

  api("/v1/queues", { signal })
    .then((tree) => {
      for (const [path, label] of queuePaths(tree.queues)) queueSelect.append(h("option", { value: path, selected: path === queue }, label));
      const names = new Set(tree.queues.flatMap(function all(n) { return [...n.tenants, ...n.children.flatMap(all)]; }));
      for (const name of [...names].sort()) tenantList.append(h("option", { value: name }));
    })
    .catch(() => {});

  for (const [key, label] of COLUMNS) {
    const active = sort.key === key;
    head.append(
      h(
        "th",
        { scope: "col", "aria-sort": active ? (sort.dir > 0 ? "ascending" : "descending") : "none" },
        h("button", { type: "button", class: "sort", onclick: () => { sort = { key, dir: active && sort.dir > 0 ? -1 : 1 }; go({}); } }, label, active ? (sort.dir > 0 ? " ▲" : " ▼") : ""),
      ),
    );
  }

  // A folded row names its elements (`<array>-[0-5]`) and opens or closes them; an element's row links to its page.
  function idCell(job) {
    if (!job.elements) return h("th", { scope: "row" }, h("a", { href: `#/job/${encodeURIComponent(job.id)}` }, job.id));
    const open = opened.has(job.id);
    const toggle = () => {
      if (open) opened.delete(job.id);
      else opened.add(job.id);
      draw();
    };
    const label = `${open ? "Hide" : "Show"} the ${job.elements} elements of ${job.id}`;
    return h("th", { scope: "row" }, h("button", { type: "button", class: "fold", "aria-expanded": String(open), "aria-label": label, onclick: toggle }, open ? "▾" : "▸"), ` ${job.id}`);
  }

  function row(job) {
    return h(
      "tr",
      { dataset: { job: job.id, state: job.state, tenant: job.tenant, ...(job.elements ? { elements: job.elements } : {}) }, class: fresh.has(job.id) ? "fresh" : "" },
      idCell(job),
      h("td", {}, job.name),
      h("td", {}, job.tenant),
      h("td", {}, job.queue),
      h("td", {}, h("span", { class: `badge state-${job.state.toLowerCase()}` }, job.state)),
      h("td", { class: "num" }, String(job.priority)),
      h("td", { class: "when" }, shortWhen(job.submit_time)),
      h("td", {}, job.cluster || "—"),
      h("td", { class: "num" }, String(job.attempt)),
      // Why a queued job waits: the API's code (federation/waits.py) with its text on hover; else the last move's reason.
      h("td", { class: "reason", title: job.wait?.text ?? "" }, job.wait?.code ?? (job.reason || "")),
    );
  }

  function draw() {
    let shown = search ? items.filter((j) => [j.id, j.name, j.wait?.code, j.reason, j.cluster, j.queue, j.tenant].some((v) => (v || "").toLowerCase().includes(search))) : items.slice();
    if (sort.key) shown.sort((a, b) => (a[sort.key] < b[sort.key] ? -sort.dir : a[sort.key] > b[sort.key] ? sort.dir : 0));
    const rows = expandAll ? shown : foldArrays(shown).flatMap((job) => (job.elements && opened.has(job.id) ? [job, ...job.members] : [job]));
    tbody.replaceChildren(...(rows.length ? rows.map(row) : [h("tr", {}, h("td", { colspan: COLUMNS.length }, "No jobs."))]));
    pager.replaceChildren(
      h("button", { type: "button", disabled: pageIndex === 0, onclick: () => load(pageIndex - 1) }, "← Previous"),
      h("span", {}, ` Page ${pageIndex + 1} (${items.length} jobs${search ? `, ${shown.length} match` : ""}) `),
      h("button", { type: "button", disabled: !next, onclick: () => load(pageIndex + 1) }, "Next →"),
    );
  }

  async function load(index) {
    let { stage, cursor } = tokens[index];
    const read = [];
    // A state with no jobs costs one read that returns nothing: those do not count against MAX_READS.
    for (let n = 0; n < MAX_READS + stages.length && read.length < PAGE_SIZE && stage < stages.length; n += 1) {
      const params = { ...server, state: stages[stage], limit: PAGE_SIZE - read.length, continue: cursor };
      const page = await api("/v1/jobs", { params, signal });
      read.push(...page.items);
      cursor = page.continue;
      if (!cursor) stage += 1;
    }
    pageIndex = index;
    items = read;
    next = stage < stages.length ? { stage, cursor } : null;
    tokens[index + 1] = next;
    fresh.clear();
    draw();
  }

  await load(0);
  root.dataset.renderedMs = String(Math.round(performance.now() - started));
  status(`${items.length} jobs on page 1, shown in ${root.dataset.renderedMs} ms`);

  stream(
    "/v1/jobs",
    server,
    ({ event, data }) => {
      if (event !== "jobs") return;
      for (const { type, job } of data.changes) {
        const at = items.findIndex((j) => j.id === job.id);
        if (type === "delete") {
          if (at >= 0) items.splice(at, 1);
        } else if (at >= 0) {
          items[at] = job;
          fresh.add(job.id);
        } else if (pageIndex === 0) {
          items.unshift(job); // new to this listing: shown on the first page until the next read
          fresh.add(job.id);
        }
      }
      draw();
    },
    {
      signal,
      onState: (text) => {
        live.dataset.live = text;
        live.textContent = text === "live" ? "● live" : text;
      },
    },
  );
}
