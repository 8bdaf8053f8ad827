// Clusters: state, labels, capacity and free space by node shape, and how long ago each agent reported
// (red past cluster.lostAfter); an admin cordons and uncordons here (POST /v1/clusters/{name}/cordon).
import { api } from "../api.js";
import { duration, h, labels, resources, status, table } from "../dom.js";

const REFRESH_MS = 3000;

export async function clustersView({ root, me, signal }) {
  const body = h("div", {});
  root.append(h("h1", {}, "Clusters"), body);

  async function act(name, action) {
    await api(`/v1/clusters/${encodeURIComponent(name)}/${action}`, { method: "POST", signal });
    status(`${name} ${action}ed`);
    await load();
    body.querySelector(`tr[data-cluster="${CSS.escape(name)}"] button`)?.focus();
  }

  async function load() {
    const { items } = await api("/v1/clusters", { signal });
    // A refresh keeps what the user had: the focused button and the open shape lists.
    const focused = body.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
    const open = new Set([...body.querySelectorAll("tr[data-cluster] details[open]")].map((d) => d.closest("tr").dataset.cluster));
    const columns = ["Cluster", "State", "Backend", "Labels", "Nodes", "Capacity", "Free", "Running", "Last report", ...(me.role === "admin" ? ["Action"] : [])];
    const rows = items.map((c) => {
      const late = c.last_report_age === null || (c.lost_after !== null && c.last_report_age > c.lost_after);
      const action = c.cordoned ? "uncordon" : "cordon";
      const shapes = c.shapes.length
        ? h(
            "details",
            { open: open.has(c.name) },
            h("summary", {}, `${c.shapes.length} node shape${c.shapes.length === 1 ? "" : "s"}`),
            h(
              "ul",
              { class: "shapes" },
              c.shapes.map((s) =>
                h("li", {}, h("strong", {}, `${s.name} × ${s.count}`), `: capacity ${resources(s.allocatable)}; free ${resources(s.free)}`, s.unschedulable ? " (unschedulable)" : "", Object.keys(s.labels).length ? `; ${labels(s.labels)}` : ""),
              ),
            ),
          )
        : null;
      return {
        attrs: { dataset: { cluster: c.name, state: c.state } },
        cells: [
          c.name,
          h("span", { class: `badge state-${c.state.toLowerCase()}` }, c.state),
          c.backend,
          labels(c.labels),
          [String(c.nodes), shapes],
          resources(c.capacity),
          resources(c.free),
          String(c.running),
          h("span", { class: late ? "late" : "", title: `lostAfter ${duration(c.lost_after)}` }, c.last_report_age === null ? "never" : `${duration(c.last_report_age)} ago`, late ? " (past lostAfter)" : ""),
          ...(me.role === "admin" ? [h("button", { type: "button", dataset: { action }, "aria-label": `${action} ${c.name}`, onclick: () => act(c.name, action) }, action)] : []),
        ],
      };
    });
    body.replaceChildren(items.length ? table(columns.map((label) => ({ label })), rows, { class: "clusters", "aria-label": "Member clusters" }) : h("p", {}, "No cluster has joined yet."));
    if (focused) body.querySelector(`[aria-label="${CSS.escape(focused)}"]`)?.focus();
  }

  await load();
  const timer = setInterval(() => load().catch(() => {}), REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));
}
