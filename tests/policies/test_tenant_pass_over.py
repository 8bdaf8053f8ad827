"""A tenant that holds its fair-share slice is passed over for the rest of allocate's pass.

The anchor is HTCondor's negotiator (src/condor_negotiator.V6/matchmaker.cpp, ``Matchmaker::negotiate``):
before each job of a submitter it checks ``limitUsed >= submitterLimit`` and, once true, logs "Reached
submitter resource limit ... stopping" and stops negotiating for that submitter in this spin. fedq's
slice is checked the same way, against what the tenant held before the job, so once it is reached no
job of the tenant with nothing placed yet can pass it, whatever its size: trying them one by one only
repeats the refusal (issue 34: 2.7 million refusals in METACENTRUM-2009-2's second 10,000 jobs).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from policy_builders import conf, job, node, occupy, run, run_on

from policies import JobInfo, QueueInfo, Snapshot
from policies.actions import allocate, placing
from policies.framework.decisions import FAIR_SHARE, INSUFFICIENT
from policies.framework.hook_calls import HookCalls

FAIR = conf("allocate", ["priority", "gang"], ["fairshare"])


def test_a_tenant_at_its_slice_is_passed_over_and_waits_with_the_tenant_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Worked by hand. One queue, one 8-cpu node. Tenant A already runs 4 one-cpu tasks and has five
    # more one-cpu jobs (a0..a4); tenant B has two 3-cpu jobs (b0, b1). Both want more than half (A 9,
    # B 6), so the queue's 8 cpus spin to tenant slices of 4 and 4. B holds nothing, so it is served
    # first: b0 starts (B holds 3, below its 4); b1 is allowed by its share but finds 1 cpu idle. Then
    # A: the queue holds 7 of its 8, but A holds 4 of its 4, so a0 is refused for fair share, and so
    # would a1..a4 be: they are not tried. First pass: b0, b1, a0 = 3 tries (one by one: 2 + 5 = 7).
    # The surplus pass (no slices) then gives the last cpu to a0, and b1, a1..a4 find no room.
    tried: list[tuple[str, bool]] = []
    real = placing.try_job

    def counted(ssn: Any, j: JobInfo) -> tuple[bool, bool]:
        tried.append((j.id, ssn.surplus))
        return real(ssn, j)

    monkeypatch.setattr(allocate, "try_job", counted)
    n = node("n0", cpu=8)
    running = [run_on(job(f"r{i}", tenant="A", queue="q"), ["n0"], start=-10) for i in range(4)]
    occupy([n], running)
    a = [job(f"a{i}", tenant="A", queue="q", submit=float(i)) for i in range(5)]
    b = [job(f"b{i}", tenant="B", queue="q", cpu=3, submit=float(i)) for i in range(2)]

    d = run(FAIR, Snapshot([n], [*running, *a, *b], {"q": QueueInfo("q")}))

    assert sorted(bind.job for bind in d.binds) == ["a0", "b0"]
    first_pass = [job_id for job_id, surplus in tried if not surplus]
    assert first_pass == ["b0", "b1", "a0"], first_pass
    assert {key: (r.code, r.message) for key, r in d.tenant_reasons.items()} == {
        ("q", "A"): (FAIR_SHARE, "tenant A holds its fair share of q"),
    }
    assert [r.code for r in d.reasons["a1"]] == [INSUFFICIENT]  # tried only in the surplus pass


@st.composite
def tenants_worlds(draw: st.DrawFn) -> Snapshot:
    """Nodes, running work, and pending jobs of up to three tenants in two queues."""
    nodes = [node(f"n{i}", cpu=draw(st.sampled_from([2, 4, 8]))) for i in range(draw(st.integers(1, 4)))]
    tenants = st.sampled_from(["t1", "t2", "t3"])
    queues = st.sampled_from(["a", "b"])
    jobs: list[JobInfo] = []
    for r in range(draw(st.integers(0, 8))):
        where = draw(st.sampled_from(nodes))
        if where.idle["cpu"] < 1:
            continue
        running = job(f"r{r}", queue=draw(queues), tenant=draw(tenants), walltime=100)
        run_on(running, [where.name], start=-50, end=draw(st.sampled_from([10.0, 40.0])))
        occupy(nodes, [running])
        jobs.append(running)
    for p in range(draw(st.integers(1, 14))):
        size = draw(st.integers(1, 3))
        jobs.append(
            job(
                f"p{p}",
                tasks=size,
                cpu=draw(st.sampled_from([1, 2])),
                queue=draw(queues),
                tenant=draw(tenants),
                submit=-100 + p,
                min_available=draw(st.integers(1, size)),
                walltime=draw(st.sampled_from([5.0, 30.0, None])),
            )
        )
    weights = st.integers(1, 3)
    return Snapshot(nodes, jobs, {"a": QueueInfo("a", weight=draw(weights)), "b": QueueInfo("b", weight=draw(weights))})


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    tenants_worlds(),
    st.sampled_from(["task", "job"]),
    st.sampled_from(["allocate", "allocate, backfill"]),
)
def test_passing_over_a_tenant_changes_no_decision(world: Snapshot, placement: str, actions: str) -> None:
    """Against every job tried one by one (the hook answering nothing): the same binds, pipelined tasks
    and reservations, in the same order, whatever the world."""
    c = conf(actions, ["priority", "gang"], ["fairshare", "predicates", {"name": "reservation"}], placement=placement)
    passed = run(c, copy.deepcopy(world))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(HookCalls, "tenant_held_back", lambda self, queue, tenant: None)
        one_by_one = run(c, copy.deepcopy(world))
    assert passed.binds == one_by_one.binds
    assert passed.pipelined == one_by_one.pipelined
    assert passed.reservations == one_by_one.reservations
    assert one_by_one.tenant_reasons == {}
