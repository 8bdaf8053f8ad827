// Queues: the tree with its configuration and counts (GET /v1/queues) and, for an admin, each queue's
// fair-share slice, allocation, borrowed/lent and RUP/EUP from the quota report (GET /v1/reports/quota:
// the same numbers as `fedq report quota`). A tenant gets its own row of that report only.
import { api } from "../api.js";
import { h, number, resources, svg, table, units } from "../dom.js";

const REFRESH_MS = 10000;

function flatten(nodes, depth = 0, out = []) {
  for (const node of nodes) {
    out.push({ node, depth });
    flatten(node.children, depth + 1, out);
  }
  return out;
}

function capUnits(cap, weights) {
  // A cap leaves the resources it does not name uncapped: in units it binds only if it names every weighted one.
  const weighted = Object.keys(weights).filter((r) => weights[r] > 0);
  return weighted.length && weighted.every((r) => r in cap) ? units(cap, weights) : null;
}

export function bar(allocated, slice, cap) {
  const scale = Math.max(allocated, slice, cap ?? 0, 1e-9) * 1.1;
  const x = (v) => (150 * v) / scale + 2;
  const label = `allocated ${number(allocated)} of a fair-share slice of ${number(slice)}${cap === null ? ", uncapped" : `, cap ${number(cap)}`} units`;
  return svg(
    "svg",
    { viewBox: "0 0 160 16", class: "bar", role: "img", "aria-label": label },
    svg("rect", { x: 2, y: 3, width: 150, height: 10, class: "track" }),
    svg("rect", { x: 2, y: 3, width: Math.max(0, x(allocated) - 2), height: 10, class: allocated > slice + 1e-9 ? "used over" : "used" }),
    svg("line", { x1: x(slice), x2: x(slice), y1: 0, y2: 16, class: "slice" }),
    cap === null ? null : svg("line", { x1: x(cap), x2: x(cap), y1: 0, y2: 16, class: "cap" }),
  );
}

export async function queuesView({ root, me, signal }) {
  const heading = h("h1", {}, "Queues");
  const body = h("div", {});
  const refresh = h("button", { type: "button", onclick: () => load() }, "Refresh");
  root.append(
    heading,
    h(
      "p",
      { class: "hint" },
      "Units are weighted resources (fairshare.usageWeights). Bars: allocated (filled, red past the slice) against the fair-share slice (solid line) and the cap (dashed). ",
      refresh,
    ),
    body,
  );

  async function load() {
    const [tree, report] = await Promise.all([api("/v1/queues", { signal }), api("/v1/reports/quota", { params: { since: "1h" }, signal })]);
    const rows = new Map((report.queues || []).map((row) => [row.queue, row]));
    const weights = report.weights;
    const columns = ["Queue", "Weight", "Guarantee", "Cap", "Fair-share slice", "Allocated", "Borrowed", "Lent", "Pending", "Running", "RUP", "EUP", "Allocated vs slice and cap"].map(
      (label) => ({ label, cls: ["Weight", "Fair-share slice", "Allocated", "Pending", "Running", "RUP", "EUP"].includes(label) ? "num" : "" }),
    );
    const lines = flatten(tree.queues).map(({ node, depth }) => {
      const row = rows.get(node.path);
      const slice = row ? row.fair_share_units : null;
      const allocated = row ? row.allocated_units : null;
      return {
        attrs: { dataset: { queue: node.path } },
        cells: [
          h("span", { class: `depth-${Math.min(depth, 6)}` }, node.name, node.tenants.length ? h("small", {}, ` (${node.tenants.join(", ")})`) : null),
          number(node.weight),
          resources(node.guarantee),
          resources(node.cap),
          slice === null ? "—" : number(slice),
          allocated === null ? "—" : h("span", { dataset: { allocatedUnits: allocated } }, number(allocated), h("small", {}, ` (${resources(row.allocated)})`)),
          row ? resources(row.borrowed) : "—",
          row ? resources(row.lent) : "—",
          String(node.pending),
          String(node.running),
          row ? number(row.real_priority) : "—",
          row ? number(row.effective_priority) : "—",
          row ? bar(allocated, slice, capUnits(node.cap, weights)) : "—",
        ],
      };
    });
    const parts = [
      h("p", {}, `Federation: ${number(report.allocated_units)} of ${number(report.capacity_units)} units allocated (${resources(report.capacity)} in clusters that are not Unreachable).`),
      table(columns, lines, { class: "queues", "aria-label": "Queue tree" }),
    ];
    if (me.role === "tenant") {
      const own = report.tenants.find((row) => row.tenant === me.name);
      parts.push(
        h("h2", {}, `Your usage (tenant ${me.name})`),
        own
          ? table(
              ["Tenant", "Queues", "Allocated", "Fair share", "Borrowed", "Lent", "Pending", "Running", "RUP", "EUP"].map((label) => ({ label })),
              [
                {
                  attrs: { dataset: { tenant: own.tenant } },
                  cells: [own.tenant, own.queues.join(", "), `${number(own.allocated_units)} (${resources(own.allocated)})`, `${number(own.fair_share_units)} units (${number(100 * own.fair_share)} %)`, resources(own.borrowed), resources(own.lent), String(own.pending), String(own.running), number(own.real_priority), number(own.effective_priority)],
                },
              ],
            )
          : h("p", {}, "No usage yet."),
        h("p", { class: "hint" }, "Per-queue slices and allocations are shown to admins only (as in `fedq report quota`)."),
      );
    }
    body.replaceChildren(...parts);
  }

  await load();
  const timer = setInterval(() => load().catch(() => {}), REFRESH_MS);
  signal.addEventListener("abort", () => clearInterval(timer));
}
