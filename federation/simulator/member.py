"""One simulated member cluster: the real member ``Agent`` over a ``SimulatedBackend``, without HTTP.

The agent observes its backend (task statuses folded into job states by its ``JobTracker``), reports,
takes the federation's reply (assignments, cancellations) and runs its local session scheduler, as it
does behind ``fedq agent run``; the simulator only carries the report and the reply in memory.
"""

from __future__ import annotations

from federation.models.agent_report import PlainClusterReport, PlainStatusUpdate
from federation.models.cluster import Assignment, Cancellation, ClusterState, ReportReply
from federation.simulator.records import RunKey
from member_agent.agent import Agent
from member_agent.backends.base import NodeView, TaskReport
from member_agent.backends.simulated import SimulatedBackend
from member_agent.capacity import ShapeSummary
from member_agent.local_scheduler import LocalScheduler
from policies.clock import ManualClock


class RecordingBackend(SimulatedBackend):
    """The simulated backend, keeping each task run's start, end and final phase as ``poll`` hands them
    out (tasks.csv). Runs of one job that started and ended together share an entry, their indexes as
    ranges, so a trace's gangs of hundreds of tasks cost an entry each, not one per task."""

    def __init__(self, nodes: list[NodeView], clock: ManualClock) -> None:
        super().__init__(nodes, clock)
        self.ended: dict[RunKey, list[list[int]]] = {}  # [first, last] index ranges, in the order they ended

    def poll(self) -> list[TaskReport]:
        events = super().poll()
        for s in events:
            if s.phase.terminal:
                key = (s.job_id, s.epoch, s.task_name, s.started_at, s.finished_at, s.phase.value)
                ranges = self.ended.setdefault(key, [])
                if ranges and ranges[-1][1] + 1 == s.index:
                    ranges[-1][1] = s.index
                else:
                    ranges.append([s.index, s.index])
        return events


class Member:
    def __init__(
        self, name: str, labels: dict[str, str], nodes: list[NodeView], clock: ManualClock, scheduler: LocalScheduler
    ) -> None:
        self.name = name
        self.labels = labels
        self.backend = RecordingBackend(nodes, clock)
        self.agent = Agent(None, name, self.backend, scheduler, clock)
        # The orders for the agent, as the report handler reads them from their keys: each stays until
        # the job's lifecycle drops it (the agent's report that it took the job, or that the run ended).
        self.assigned: dict[str, Assignment] = {}
        self.stops: dict[str, Cancellation] = {}
        self._new = 0  # orders put since the last reply
        self._sent = PlainClusterReport()
        self._summary = ShapeSummary()
        self._reply: ReportReply | None = None  # the reply while no order was put or dropped

    def updates(self) -> list[PlainStatusUpdate]:
        """Observe the backend: the job updates the agent's next report carries."""
        self.agent.observe()
        self._sent = PlainClusterReport(updates=self.agent.tracker.outbox())
        return self._sent.updates

    def capacity(self) -> PlainClusterReport:
        """Capacity by node shape and the running jobs with their walltime ends.

        Identical nodes fold into one shape with a count whatever the cluster's size: the same facts
        the agent reports node by node for a small cluster, in fewer entries for the federation to scan.
        """
        return PlainClusterReport(
            nodes=self._summary(self.backend.nodes()),
            running=self.agent.tracker.running(),
            honours=self.agent.honours,
        )

    def assign(self, assignment: Assignment) -> None:
        self.assigned[assignment.job_id] = assignment
        self._new += 1
        self._reply = None

    def stop(self, order: Cancellation) -> None:
        self.stops[order.job_id] = order
        self._new += 1
        self._reply = None

    def unassign(self, job_id: str) -> None:
        if self.assigned.pop(job_id, None) is not None:
            self._reply = None

    def drop_stop(self, job_id: str) -> None:
        if self.stops.pop(job_id, None) is not None:
            self._reply = None

    def reply(self) -> int:
        """Hand the agent the federation's reply to its last report: the outstanding assignments and stop
        orders. Returns how many are new since the last reply: the agent acts on them at once (a kill
        ends its run now), so the simulator takes another round at this instant to hear of it."""
        reply = self._reply
        if reply is None:
            reply = self._reply = ReportReply(
                assignments=list(self.assigned.values()),
                cancellations=list(self.stops.values()),
                refused=[],
                state=ClusterState.READY,
            )
        new, self._new = self._new, 0
        self.agent.handle_reply(self._sent, reply)
        self._sent = PlainClusterReport()
        return new

    def schedule(self) -> int | None:
        """The agent's local cycle if a job waits to be launched; returns the jobs launched (None: no cycle)."""
        return self.agent.schedule()
