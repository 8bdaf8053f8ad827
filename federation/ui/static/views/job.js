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
  ];
  return h("dl", { class: "facts" }, rows.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function explanation(why) {
  const parts = [h("p", { class: "summary" }, why.summary || "")];
  if (why.position) parts.push(h("p", {}, `Place in line: ${why.position.overall ?? "—"} overall, ${why.position.in_queue ?? "—"} in its queue.`));
  if (why.reasons?.length) parts.push(h("ul", {}, why.reasons.map((r) => h("li", {}, h("strong", {}, r.policy), `: ${r.message}`))));
  if (why.reservation) parts.push(h("p", {}, `Reservation on ${(why.reservation.clusters || []).join(", ")} from ${when(why.reservation.start)}.`));
  parts.push(h("p", {}, `Projected start: ${why.projected_start ? `${when(why.projected_start.time)} (${why.projected_start.basis})` : "—"}`));
  if (why.dependencies?.length) parts.push(h("p", {}, `Waits on ${why.dependencies.length} dependenc${why.dependencies.length === 1 ? "y" : "ies"}.`));
  return parts;
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
    h("p", {}, job.spec.tasks.map((t) => `${t.name}: ${t.replicas ?? 1} × ${resources(t.resources)}`).join("; "), job.spec.walltime ? `; walltime ${duration(job.spec.walltime)}` : ""),
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
