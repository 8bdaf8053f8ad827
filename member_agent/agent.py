"""The member agent: report, take assignments and cancellations, schedule locally, launch.

One ``step`` is one report round trip plus one local scheduling cycle. The loop is pull-only: the
federation never connects to the cluster, so agents work from behind NAT and firewalls.

The agent holds a lease on its runs (HTCondor's job lease): each reply renews it for the federation's
``cluster.lostAfter``, counted from when the report was sent. Unheard past it, the agent stops its
runs and launches nothing (fenced), since the federation requeues them at ``requeueAfter``; once it is
heard again it reports them stopped for their old epochs, which the federation refuses if it has
requeued them meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import structlog

from federation import capabilities
from federation.client import FedqClient, FedqError
from federation.models import JobState
from federation.models.agent_report import PlainClusterReport, ReportFacts, to_wire
from federation.models.cluster import MAX_ITEMS_PER_REPORT, MAX_RUNNING_PER_REPORT, ReportReply
from member_agent.backends import honoured_fields
from member_agent.backends.base import Backend, JobRejected, LaunchError, task_id
from member_agent.capacity import summarise
from member_agent.local_scheduler import LocalScheduler
from member_agent.log_shipper import LogShipper
from member_agent.tracker import JobTracker, LocalJob
from policies.clock import Clock

log = structlog.get_logger("fedq.agent")

MAX_LAUNCH_FAILURES = 3
MAX_REPORT_WAIT = 30.0  # seconds a report may take while the lease has longer to run


class CredentialRejected(RuntimeError):
    """The federation no longer accepts this cluster's credential: rejoin with a new token."""


class Agent:
    def __init__(
        self,
        client: FedqClient | None,
        cluster: str,
        backend: Backend,
        scheduler: LocalScheduler,
        clock: Clock,
        *,
        report_interval: float = 2.0,
        lease: float | None = None,
    ) -> None:
        """``lease``: the federation's lostAfter as of the join, until a reply names it again; it runs
        from now, so runs adopted after a restart are fenced too if the federation stays unreachable."""
        self.client = client
        self.cluster = cluster
        self.backend = backend
        self.scheduler = scheduler
        self.clock = clock
        self.report_interval = report_interval
        self.tracker = JobTracker(clock)
        self.shipper = LogShipper()
        self.honours = sorted(honoured_fields(backend.name))  # reported: the federation sends nothing else
        self._reconciled = False
        # The nodes, runs and honoured fields of the report the federation holds, and its revision there.
        self._stored: tuple[Sequence[object], Sequence[object], Sequence[str]] | None = None
        self._stored_revision: int | None = None
        self._launch_failures: dict[str, int] = {}
        self.log = log.bind(cluster=cluster)
        self.lease = lease  # the federation's lostAfter, from its last reply
        self.fenced = False
        self._sent_at = clock.now()  # when the report being answered was sent
        self._heard_at = clock.now()  # when the last answered report was sent: the lease runs from there

    def reconcile(self) -> None:
        """Before scheduling again after a restart: hold what the backend still runs, report it as known."""
        self.tracker.adopt(self.backend.tasks())
        self._reconciled = False

    def step(self) -> ReportReply | None:
        """One round trip over HTTP; ``build_report``/``handle_reply`` are the transport-free halves."""
        assert self.client is not None, "step() reports over HTTP; without a client use build_report/handle_reply"
        self.observe()
        report = self.build_report()
        try:
            body: dict[str, Any] = self.client.request(
                "POST",
                f"/v1/clusters/{self.cluster}/report",
                body=to_wire(report),
                timeout=self._report_wait(),
            )
        except FedqError as exc:
            if exc.status in (401, 403, 404):
                raise CredentialRejected(str(exc)) from exc
            self.log.warning("report failed", error=str(exc))
            self.keep_lease()
            self.schedule()
            return None
        reply = ReportReply.model_validate(body)
        self.handle_reply(report, reply)
        self.schedule()
        return reply

    def run(self, stop: threading.Event) -> None:
        self.reconcile()
        while not stop.is_set():
            try:
                self.step()
            except CredentialRejected:
                # No report will be heard again, so the federation requeues these runs: stop them first.
                self.fence("fenced: this cluster's credential was rejected")
                self.log.error("credential rejected; stopping")
                raise
            except Exception:
                self.log.exception("agent step failed; retrying")
                self.keep_lease()
            stop.wait(self.report_interval)

    def _report_wait(self) -> float:
        """A report waits no longer than the lease has left (and one interval), so a cut connection
        that never answers cannot hold the agent past its lease."""
        if self.lease is None:
            return MAX_REPORT_WAIT
        left = self.lease - (self.clock.now() - self._heard_at)
        return min(MAX_REPORT_WAIT, max(left, self.report_interval))

    def keep_lease(self) -> None:
        """After a report that got no reply: past the lease, stop every run and hand back what waits."""
        if self.fenced or self.lease is None:
            return
        silent = self.clock.now() - self._heard_at
        if silent >= self.lease:
            self.fence(f"fenced: federation unreachable for {silent:.1f}s (lease {self.lease:g}s)")

    def fence(self, reason: str) -> None:
        """Stop every run and hand back what waits; launch nothing until the federation answers."""
        self.fenced = True
        stopped = 0
        for job in list(self.tracker.jobs.values()):
            if job.state.terminal or job.state is JobState.PENDING:
                continue
            if job.launched:
                self.backend.kill(job.job_id, job.epoch, reason)
            else:
                self.tracker.hand_back(job, reason)
            stopped += 1
        self.log.warning("fenced: runs stopped", jobs=stopped, reason=reason)

    def observe(self) -> None:
        """Fold the backend's task status changes into job states."""
        for status in self.backend.poll():
            failed = self.tracker.observe(status)
            if failed is not None:
                self.backend.kill(failed.job_id, failed.epoch, "gang member failed")
        if self.shipper.limits is not None:
            self.shipper.add(self.backend.logs())

    def build_report(self) -> PlainClusterReport:
        """What the federation hears this round, within the report's limits: updates beyond
        ``MAX_ITEMS_PER_REPORT`` wait for the next report (they are acknowledged in order), and past
        ``MAX_RUNNING_PER_REPORT`` running jobs only those ending soonest are listed. The federation
        charges a running job it is not told of against the cluster's free capacity, so a shorter
        list only makes it cautious; a report over the limits would be refused whole, every time.
        Built plain (no validation: the federation validates what arrives); ``to_wire`` is its body."""
        running = self.tracker.running()
        if len(running) > MAX_RUNNING_PER_REPORT:
            running.sort(key=lambda job: (job.expected_end is None, job.expected_end or 0.0))
            del running[MAX_RUNNING_PER_REPORT:]
        self._sent_at = self.clock.now()
        nodes = summarise(self.backend.nodes())
        # Nothing new but the time: name the report the federation holds instead of sending it again.
        unchanged = self._stored is not None and self._stored == (nodes, running, self.honours)
        return PlainClusterReport(
            nodes=[] if unchanged else nodes,
            running=[] if unchanged else running,
            updates=self.tracker.outbox()[:MAX_ITEMS_PER_REPORT],
            known=None if self._reconciled else self.tracker.known(),
            honours=[] if unchanged else self.honours,
            logs=self.shipper.chunks(),
            unchanged_since=self._stored_revision if unchanged else None,
            sent_at=self._sent_at,  # what the federation reads this report's times against
        )

    def handle_reply(self, report: ReportFacts, reply: ReportReply) -> None:
        """The federation accepted ``report``: forget its updates, then act on the reply."""
        self.tracker.acknowledge(len(report.updates))
        if report.unchanged_since is None:
            self._stored = (report.nodes, report.running, report.honours)
        self._stored_revision = reply.revision
        if reply.revision is None:
            self._stored = None
        self._reconciled = True
        self._heard_at = self._sent_at
        self.lease = reply.lease
        self.shipper.limits = reply.log_limits
        self.shipper.acknowledge(reply.log_acks, report.logs)
        if self.fenced:
            self.fenced = False
            self.log.info("federation heard again: fenced runs reported stopped")
        self._apply(reply)

    def _apply(self, reply: ReportReply) -> None:
        for refused in reply.refused:
            self.tracker.drop(refused["job_id"])
            self.backend.kill(refused["job_id"], refused["epoch"], "fenced: stale epoch")
        for order in reply.cancellations:
            job = self.tracker.jobs.get(order.job_id)
            if job is None or job.epoch != order.epoch:
                self.backend.kill(order.job_id, order.epoch, order.reason)
                continue
            if order.reason.startswith("stale run"):
                self.tracker.drop(order.job_id)
                self.backend.kill(order.job_id, order.epoch, order.reason)
            elif job.cancel_reason is None:
                self.tracker.cancel(job, order.reason)
                if job.launched:
                    self.backend.kill(job.job_id, job.epoch, order.reason)
        for assignment in reply.assignments:
            job = self.tracker.admit(assignment)
            if job is None:
                continue
            self.log.info("admitted", job_id=assignment.job_id, epoch=assignment.epoch)
            missing = capabilities.unhonoured(assignment.spec, self.honours)
            if missing:
                # The federation sends no such job here; one dispatched before a report changed what this
                # cluster honours would run wrong (an image ignored), so it fails instead of running.
                fields = ", ".join(f"{name} ({path})" for name, path in missing.items())
                self.tracker.fail(job, f"the {self.backend.name} backend of this cluster does not honour {fields}")

    def schedule(self) -> int | None:
        """Run the local session (only once reconciled after a restart) and launch what it placed;
        returns how many launches were made (jobs started, and running jobs given more tasks), or None
        when no session ran (nothing waited: no job to start, no elastic job with tasks to place)."""
        if not self._reconciled or self.fenced:
            return None
        pending = self.tracker.pending()
        if not pending and not self.tracker.growing():
            return None
        nodes = self.backend.nodes()
        for job in self.scheduler.never_fits(pending, nodes):
            self.tracker.hand_back(job, "does not fit any node of this cluster")
        running = [job for job in self.tracker.jobs.values() if job.launched and not job.state.terminal]
        pending = [job for job in pending if job.state is JobState.ADMITTED]  # less those just handed back
        plan = self.scheduler.plan(pending, running, nodes)
        for job, reason in plan.evictions:
            self.backend.kill(job.job_id, job.epoch, f"preempted: {reason}")
        for job, keys, reason in plan.shrinks:
            # Down-to-min: the tasks beyond its gang go, the job runs on; they wait to be placed again.
            ids = [task_id(job.job_id, name, index) for name, index in keys]
            job.shrinking.update(ids)
            self.backend.kill(job.job_id, job.epoch, f"preempted: {reason}", tasks=ids)
        return sum(self._launch(job, placement) for job, placement in plan.launches)

    def _launch(self, job: LocalJob, placement: dict[tuple[str, int], str]) -> bool:
        """Start a job's placed tasks: its gang (and what more fit) or, for a job already launched, more
        of its tasks. A later launch that fails leaves the job running; its tasks are placed again."""
        launches = job.launches(placement)
        if self.shipper.limits is not None:
            launches = [replace(task, log_limit=self.shipper.limits.max_bytes_per_job) for task in launches]
        more = job.launched
        try:
            self.backend.launch(launches)
        except JobRejected as exc:
            self.log.warning("launch refused: the job cannot run here", job_id=job.job_id, error=str(exc))
            if more:  # its gang runs here: these tasks wait for a later session
                return False
            self.tracker.fail(job, str(exc))
            return False
        except LaunchError as exc:
            self.log.warning("launch failed", job_id=job.job_id, error=str(exc), more=more)
            if more:
                return False
            failures = self._launch_failures.get(job.job_id, 0) + 1
            self._launch_failures[job.job_id] = failures
            if failures >= MAX_LAUNCH_FAILURES:
                self.tracker.hand_back(job, f"launch failed {failures} times: {exc}")
                del self._launch_failures[job.job_id]
            return False
        self.tracker.mark_placed(job, [(task.task_name, task.index) for task in launches])
        self._launch_failures.pop(job.job_id, None)
        self.log.info("launched", job_id=job.job_id, epoch=job.epoch, tasks=len(placement), more=more)
        return True
