"""Small builders for policy tests: nodes, jobs, running work, confs, one-call sessions."""

from __future__ import annotations

from typing import Any

from policies import (
    Decisions,
    JobInfo,
    ManualClock,
    NodeInfo,
    SchedulerConf,
    Snapshot,
    TaskInfo,
    TaskStatus,
    close_session,
    load_conf,
    open_session,
)

GI = 1024.0**3


def node(name: str, cpu: float = 1, memory: float = 0, **extra: Any) -> NodeInfo:
    alloc = {"cpu": float(cpu)}
    if memory:
        alloc["memory"] = float(memory)
    labels = extra.pop("labels", {})
    return NodeInfo(name, alloc, labels=labels, **extra)


def job(
    jid: str,
    tasks: int = 1,
    cpu: float = 1,
    memory: float = 0,
    queue: str = "default",
    tenant: str = "t",
    priority: int = 0,
    submit: float = 0.0,
    min_available: int = 0,
    walltime: float | None = None,
    **extra: Any,
) -> JobInfo:
    req = {"cpu": float(cpu)}
    if memory:
        req["memory"] = float(memory)
    return JobInfo(
        jid,
        queue,
        tenant,
        priority,
        submit,
        min_available,
        walltime=walltime,
        tasks=[TaskInfo(jid, "t", i, dict(req)) for i in range(tasks)],
        **extra,
    )


def run_on(j: JobInfo, nodes: list[str], start: float = 0.0, end: float | None = None) -> JobInfo:
    """Mark ``j``'s tasks running, task i on nodes[i], expected to end at ``end``."""
    j.start_time = start
    for t, n in zip(j.tasks, nodes, strict=True):
        t.status = TaskStatus.RUNNING
        t.node = n
        t.start_time = start
        t.expected_end = end
    return j


def occupy(nodes: list[NodeInfo], jobs: list[JobInfo]) -> None:
    """Take running tasks' resources from their nodes' idle, as a snapshot builder would."""
    by_name = {n.name: n for n in nodes}
    for j in jobs:
        for t in j.tasks:
            if t.status == TaskStatus.RUNNING:
                n = by_name[t.node]
                for r, q in t.resources.items():
                    n.idle[r] = n.idle.get(r, 0.0) - q
                    n.used[r] = n.used.get(r, 0.0) + q


def conf(actions: str, *tiers: list[Any], placement: str = "task", **configs: dict[str, Any]) -> SchedulerConf:
    """``tiers``: lists of plugin names or {name, arguments} dicts."""
    raw: dict[str, Any] = {
        "actions": actions,
        "placement": placement,
        "tiers": [{"plugins": [p if isinstance(p, dict) else {"name": p} for p in tier]} for tier in tiers],
        "configurations": [{"name": k, "arguments": v} for k, v in configs.items()],
    }
    return load_conf(raw)


def run(c: SchedulerConf, snapshot: Snapshot, now: float = 0.0) -> Decisions:
    ssn = open_session(c, snapshot, ManualClock(now))
    ssn.run()
    return close_session(ssn)


def bound(d: Decisions) -> dict[str, int]:
    """Tasks bound per job."""
    out: dict[str, int] = {}
    for b in d.binds:
        out[b.job] = out.get(b.job, 0) + 1
    return out
