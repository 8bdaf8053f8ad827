"""What actions and the framework ask the plugins, one method per hook (Volcano's session_plugins.go).

Each goes straight to the hook's dispatcher (``Hooks.dispatchers``), which combines the tiers by
the hook's mode; the method only shapes the answer for its callers. Mixed into ``Session``: the
keys and checks are asked on every heap push and every node judged, so they stay one method call
on the session.
"""

from __future__ import annotations

from typing import Any

from policies.framework.hooks import Fn, Hooks
from policies.snapshot import JobInfo, NodeInfo, TaskInfo


class HookCalls:
    # Set by ``Session`` from its plugin set.
    hooks: Hooks
    _hook: dict[str, Fn]  # each hook's dispatcher

    def job_key(self, job: JobInfo) -> tuple[Any, ...]:
        return (self._hook["job_order"](job), job.submit_time, job.id)

    def task_key(self, task: TaskInfo) -> tuple[Any, ...]:
        return (self._hook["task_order"](task), task.index)

    def queue_key(self, queue: str) -> tuple[Any, ...]:
        return (self._hook["queue_order"](queue), queue)

    def tenant_key(self, queue: str, tenant: str) -> tuple[Any, ...]:
        return self._hook["tenant_order"](queue, tenant)  # type: ignore[no-any-return]

    def overused(self, queue: str) -> tuple[str, str] | None:
        return self._hook["overused"](queue)  # type: ignore[no-any-return]

    def tenant_held_back(self, queue: str, tenant: str) -> tuple[str, str] | None:
        """Whether ``allocatable`` would now refuse every job of ``tenant`` in ``queue`` that has nothing
        placed yet, whatever its size: the tenant's other such jobs need not be tried in this pass."""
        return self._hook["tenant_held_back"](queue, tenant)  # type: ignore[no-any-return]

    def job_valid(self, job: JobInfo) -> tuple[str, str] | None:
        return self._hook["job_valid"](job)  # type: ignore[no-any-return]

    def job_enqueueable(self, job: JobInfo) -> tuple[str, str] | None:
        return self._hook["job_enqueueable"](job)  # type: ignore[no-any-return]

    def job_reservable(self, job: JobInfo) -> bool:
        """No reservation plugin: nobody reserves (Volcano's greedy allocate)."""
        return self.hooks.has("job_reservable") and self._hook["job_reservable"](job) is None

    def allocatable(self, task: TaskInfo, job: JobInfo) -> tuple[str, str] | None:
        """Whether the job's queue (and tenant) may take ``task`` now: shares, caps, quotas."""
        return self._hook["allocatable"](task, job)  # type: ignore[no-any-return]

    def job_ready(self, job: JobInfo) -> bool:
        return bool(self._hook["job_ready"](job))

    def job_pipelined(self, job: JobInfo) -> bool:
        return self._hook["job_pipelined"](job) is not False

    def job_starving(self, job: JobInfo) -> bool:
        return bool(self._hook["job_starving"](job))

    def predicate(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> tuple[str, str] | None:
        return self._hook["predicate"](task, job, node)  # type: ignore[no-any-return]

    def node_score(self, task: TaskInfo, job: JobInfo, node: NodeInfo) -> float:
        return float(self._hook["node_order"](task, job, node))
