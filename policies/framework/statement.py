"""Statement: tentative decisions that are committed together or rolled back.

An uncommitted gang gives back everything it took: each operation keeps what is needed to undo
it exactly (for a cluster, the node shape a task was packed into).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from policies.snapshot import JobInfo, NodeInfo, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from policies.framework.session import Session

_ALLOCATE, _PIPELINE, _EVICT = "allocate", "pipeline", "evict"


class _Op:
    __slots__ = ("kind", "task", "job", "node", "undo", "reason", "action")

    def __init__(
        self,
        kind: str,
        task: TaskInfo,
        job: JobInfo,
        node: NodeInfo | None,
        undo: object,
        reason: str = "",
        action: str = "",
    ) -> None:
        self.kind = kind
        self.task = task
        self.job = job
        self.node = node
        self.undo = undo
        self.reason = reason
        self.action = action  # an eviction's: the action that made it (preempt, reclaim)


class Statement:
    def __init__(self, ssn: Session) -> None:
        self.ssn = ssn
        self.ops: list[_Op] = []

    def allocate(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> None:
        token = self.ssn.allocate_task(task, job, node)
        self.ops.append(_Op(_ALLOCATE, task, job, node, token))

    def pipeline(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> None:
        self.ssn.pipeline_task(task, job, node)
        self.ops.append(_Op(_PIPELINE, task, job, node, None))

    def evict(self, task: TaskInfo, job: JobInfo, reason: str, action: str = "") -> None:
        before = self.ssn.evict_task(task, job)
        self.ops.append(_Op(_EVICT, task, job, None, before, reason, action))

    def mark(self) -> int:
        return len(self.ops)

    def rollback_to(self, mark: int) -> None:
        """Undo, newest first, every operation after ``mark``."""
        while len(self.ops) > mark:
            op = self.ops.pop()
            if op.kind == _ALLOCATE:
                assert op.node is not None
                self.ssn.unallocate_task(op.task, op.job, op.node, op.undo)
            elif op.kind == _PIPELINE:
                assert op.node is not None
                self.ssn.unpipeline_task(op.task, op.job, op.node)
            else:
                assert isinstance(op.undo, TaskStatus)
                self.ssn.unevict_task(op.task, op.job, op.undo)

    def victims(self, since: int = 0) -> list[JobInfo]:
        """The jobs evicted from by the operations after ``since``, each once, in order."""
        jobs = {id(op.job): op.job for op in self.ops[since:] if op.kind == _EVICT}
        return list(jobs.values())

    def discard(self) -> None:
        self.rollback_to(0)

    def commit(self, bind: bool = True) -> None:
        """Record the decisions. ``bind=False``: the gang is only pipelined, nothing starts yet."""
        for op in self.ops:
            if op.kind == _EVICT:
                self.ssn.record_eviction(op.task, op.job, op.reason, op.action)
            else:
                self.ssn.record_bind(op.task, op.job, pipelined=not bind or op.kind == _PIPELINE)
        self.ops = []
