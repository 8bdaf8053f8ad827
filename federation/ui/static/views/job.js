// One job: its record and spec (GET /v1/jobs/{id}), its history as a timeline kept live by its event
// stream (GET /v1/jobs/{id}/events?watch=true), why it waits (GET /v1/jobs/{id}/explain) and its logs
// (GET /v1/jobs/{id}/logs where the server has that route, else the record's log_tail).
import { api, hasRoute, stream } from "../api.js";
import { duration, h, resources, when } from "../dom.js";

const LOGS = "/v1/jobs/{job_id}/logs";
const LOG_LINES = 500; // the last lines of the latest run; `fedq logs ID` has them all

function facts(job) {
  const rows = [
    ["State", h("span", { class: `badge state-${job.state.toLowerCase()}`, id: "job-state" }, job.state)],
    ["Name", job.name],
    ["Tenant", job.tenant],
    ["Queue", job.queue],
    ["Priority", String(job.priority)],
    ["Cluster", job.cluster || "—"],
    ["Submitted", when(job.submit_time)],
    ["Started", when(job.start_time)],
    ["Ended", when(job.end_time)],
    ["Attempt / retries", `${job.attempt} / ${job.retries ?? 0}`],
    ["Reason", job.reason || "—"],
    ["Held", job.held_by ? `by ${job.held_by} since ${when(job.held_at)}` : "—"],
  ];
  return h("dl", { class: "facts" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function onClusters(map) {
  // A reservation's `clusters`: an object, cluster -> the job's tasks held there (docs/ui.md), never a list.
  return Object.entries(map || {})
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([cluster, tasks]) => `${cluster} (${tasks} task${tasks === 1 ? "" : "s"})`)
    .join(", ");
}

function reservation(r, attrs, who) {
  const names = Object.keys(r.clusters || {}).sort();
  return h("p", { ...attrs, dataset: { clusters: names.join(","), start: String(r.start) } }, `${who} on ${onClusters(r.clusters)} from ${when(r.start)} until ${when(r.end)}.`);
}

function explanation(why) {
  // Every field but id, state, queue, tenant and summary depends on the state: a running or finished
  // job's explanation is its summary alone. A job making room by preemption says so in its reasons
  // (code "preempting": "will preempt 2 jobs on east") and summary, as any other reason.
  const parts = [h("p", { class: "summary", id: "explain-summary" }, why.summary || "")];
  if (why.held) parts.push(h("p", { id: "held" }, `Held by ${why.held.by} since ${when(why.held.at)}.`));
  if (why.position) parts.push(h("p", {}, `Place in line: ${why.position.overall ?? "—"} overall, ${why.position.in_queue ?? "—"} of ${why.position.queue_length ?? "—"} in its queue.`));
  if (why.reasons?.length) parts.push(h("ul", { id: "reasons" }, why.reasons.map((r) => h("li", { dataset: { code: r.code } }, h("strong", {}, r.policy), `: ${r.message}`))));
  if (why.reservation) parts.push(reservation(why.reservation, { id: "reservation" }, "Reservation"));
  if (why.reasons?.some((r) => r.code === "reservation")) {
    // held back by another job's reservation: the reservations it would delay (every one the cycle booked)
    for (const other of why.other_reservations || []) {
      parts.push(reservation(other, { class: "other-reservation" }, other.job ? `Job ${other.job}'s reservation` : "Another tenant's job's reservation"));
    }
  }
  if ("projected_start" in why) parts.push(h("p", {}, `Projected start: ${why.projected_start ? `${when(why.projected_start.time)} (${why.projected_start.basis})` : "—"}`));
  if (why.dependencies?.length) {
    parts.push(
      h("ul", { id: "dependencies" }, why.dependencies.map((d) => {
        const states = Object.entries(d.states).map(([state, count]) => (d.elements ? `${count} ${state}` : state)).join(", ");
        return h("li", {}, `${d.condition} on ${d.elements ? "array" : "job"} ${d.job} (${states}): ${d.verdict}`);
      })),
    );
  }
  if (why.clusters) parts.push(h("p", {}, `Matching clusters: ${why.clusters.map((c) => `${c.name} (${c.state})`).join(", ") || "none"}.`));
  return parts;
}

function tasks(spec) {
  // Each task's name and replicas are always in the API's job record, defaults too (docs/ui.md).
  const walltime = spec.walltime ? `; walltime ${duration(spec.walltime)}` : "";
  return h("p", { id: "spec-tasks" }, spec.tasks.map((t) => `${t.name}: ${t.replicas} × ${resources(t.resources)}`).join("; "), walltime);
}

export async function jobView({ root, arg, signal }) {
  const id = arg;
  const job = await api(`/v1/jobs/${encodeURIComponent(id)}`, { signal });
  const factsBox = h("div", {}, facts(job));
  const whyBox = h("div", { id: "explain" });
  const logBox = h("pre", { class: "logs", id: "logs", tabindex: 0 });
  const timeline = h("ol", { class: "timeline", id: "timeline", "aria-live": "polite" });
  root.append(
    h("p", {}, h("a", { href: "#/jobs" }, "← Jobs")),
    h("h1", {}, `Job ${id}`),
    h("div", { class: "columns" }, h("section", {}, h("h2", {}, "Record"), factsBox), h("section", {}, h("h2", {}, "Why it waits"), whyBox)),
    h("h2", {}, "Events"),
    timeline,
    h("h2", {}, "Logs"),
    logBox,
    h("h2", {}, "Spec"),
    tasks(job.spec),
    h("pre", { class: "spec", tabindex: 0 }, JSON.stringify(job.spec, null, 2)),
  );

  const refresh = async () => {
    const [record, why] = await Promise.all([api(`/v1/jobs/${encodeURIComponent(id)}`, { signal }), api(`/v1/jobs/${encodeURIComponent(id)}/explain`, { signal })]);
    factsBox.replaceChildren(facts(record));
    whyBox.replaceChildren(...explanation(why));
    if (await hasRoute(LOGS)) {
      const logs = await api(`/v1/jobs/${encodeURIComponent(id)}/logs`, { params: { tail: LOG_LINES }, signal });
      const lines = logs.lines.map((l) => `${l.task} ${l.stream}: ${l.text}`);
      if (logs.cut) lines.push("(output cut at logs.maxBytesPerJob)");
      logBox.textContent = lines.join("\n") || "(no output reported yet)";
    } else {
      logBox.textContent = record.log_tail || "(no output reported yet)";
    }
  };
  await refresh();

  stream(
    `/v1/jobs/${encodeURIComponent(id)}/events`,
    {},
    ({ event, data }) => {
      if (event === "removed") return;
      for (const e of data.events || []) {
        timeline.append(
          h("li", { dataset: { to: e.to } }, h("time", {}, when(e.time)), " ", h("strong", {}, `${e.from ?? "—"} → ${e.to}`), e.cluster ? ` on ${e.cluster}` : "", e.reason ? `: ${e.reason}` : ""),
        );
      }
      if (data.events?.length) refresh().catch(() => {});
    },
    { signal },
  );
}
