"""Worked examples with known answers, each citing where the answer comes from."""

from __future__ import annotations

import pytest
from policy_builders import GI, bound, conf, job, node, occupy, run, run_on

from policies import Claim, QueueInfo, Snapshot, decay_rup, divide_tree, effective_priority, pie_spin, water_fill

DAY = 86400.0


# ---- HTCondor user priorities ----------------------------------------------------------------
# Source: HTCondor manual, "User Priorities and Negotiation", section Real User Priority:
# "if the PRIORITY_HALFLIFE ... is set to 86400 (one day), and if a user whose RUP was 10 has no
# running jobs, that user's RUP would be 5 one day later, 2.5 two days later".


def test_htcondor_half_life_decay_halves_an_idle_users_priority_each_half_life() -> None:
    assert decay_rup(10.0, 0.0, DAY, DAY) == pytest.approx(5.0)
    assert decay_rup(10.0, 0.0, 2 * DAY, DAY) == pytest.approx(2.5)
    # Non-uniform steps give the same answer (the manual: beta "can be calculated over non-uniform
    # time intervals without affecting the calculation").
    stepped = decay_rup(decay_rup(10.0, 0.0, 0.3 * DAY, DAY), 0.0, 1.7 * DAY, DAY)
    assert stepped == pytest.approx(2.5)


def test_htcondor_rup_equilibrates_to_resources_used_and_never_drops_below_half() -> None:
    # Same section: "if a specific user continuously uses exactly ten resources for a long period
    # of time, the RUP of that user stabilizes at ten"; "Every user begins with a RUP of one half".
    rup = 0.5
    for _ in range(24 * 30):
        rup = decay_rup(rup, 10.0, 3600.0, DAY)
    assert rup == pytest.approx(10.0, rel=1e-3)
    assert decay_rup(0.6, 0.0, 30 * DAY, DAY) == 0.5


def test_htcondor_pie_spin_slices_go_as_inverse_eup_and_leftovers_spin_again() -> None:
    # Source: HTCondor manual, Effective User Priority: "user A with EUP=5 will receive twice as
    # many resources as user B with EUP=10 and four times as many resources as user C with EUP=20.
    # However, if A does not use the full number of resources that A may be given, the available
    # resources are repartitioned and distributed among remaining users according to the inverse
    # ratio rule." With 70 slots: 40 / 20 / 10; if A wants only 10, B and C split 60 as 2:1.
    eups = {"A": 5.0, "B": 10.0, "C": 20.0}
    full = pie_spin(70, {"A": 100, "B": 100, "C": 100}, eups)
    assert full == pytest.approx({"A": 40, "B": 20, "C": 10})
    spun = pie_spin(70, {"A": 10, "B": 100, "C": 100}, eups)
    assert spun == pytest.approx({"A": 10, "B": 40, "C": 20})


def test_effective_priority_multiplies_by_factor_and_divides_by_weight() -> None:
    # Source: HTCondor manual, Priority Calculation: pi_e = pi_r x f; fedq DESIGN 3.3 adds "/ weight".
    assert effective_priority(4.0, priority_factor=1000.0) == 4000.0
    assert effective_priority(4.0, 1.0, weight=2.0) == 2.0


# ---- HTCondor hierarchical group quotas -------------------------------------------------------
# Source: HTCondor manual, "Accounting Groups with Hierarchical Group Quotas": 30 slots, physics
# quota 20 (hep 15, lep 5), chemistry 10, GROUP_ACCEPT_SURPLUS false except hep and lep: "hep and
# lep are allowed to exceed their quota of 15 and 5, but their sum cannot exceed 20, for that is
# their parent's quota. If group_physics had GROUP_ACCEPT_SURPLUS set to True, then either ...
# would not be limited by quota." And: "If a power failure removed half of the original 30,
# leaving fifteen slots, physics would be scaled back to a quota of ten, and chemistry to five."


def _physics(
    hep: float, lep: float, chem: float, physics_surplus: bool, capacity: float = 30
) -> dict[str, dict[str, float]]:
    claims = {
        "physics": Claim(1, {"slots": 20}, None, physics_surplus, {"slots": hep + lep}),
        "physics.hep": Claim(1, {"slots": 15}, None, True, {"slots": hep}),
        "physics.lep": Claim(1, {"slots": 5}, None, True, {"slots": lep}),
        "chemistry": Claim(1, {"slots": 10}, None, False, {"slots": chem}),
    }
    children = {"": ["physics", "chemistry"], "physics": ["physics.hep", "physics.lep"]}
    return divide_tree({"slots": capacity}, claims, children)


def test_hierarchical_quota_with_accept_surplus_inside_a_hard_parent_quota() -> None:
    got = _physics(hep=60, lep=0, chem=60, physics_surplus=False)
    assert got["physics.hep"]["slots"] == pytest.approx(20)  # takes lep's unused 5
    assert got["physics"]["slots"] == pytest.approx(20)  # but never past physics' 20
    assert got["chemistry"]["slots"] == pytest.approx(10)


def test_hierarchical_quota_without_accept_surplus_leaves_idle_slots_idle() -> None:
    got = _physics(hep=60, lep=60, chem=0, physics_surplus=False)
    assert got["physics"]["slots"] == pytest.approx(20)  # chemistry's 10 stay idle
    assert got["physics.hep"]["slots"] == pytest.approx(15)
    assert got["physics.lep"]["slots"] == pytest.approx(5)


def test_hierarchical_quota_parent_accepting_surplus_is_not_limited_by_quota() -> None:
    got = _physics(hep=60, lep=60, chem=0, physics_surplus=True)
    assert got["physics"]["slots"] == pytest.approx(30)
    assert got["physics.hep"]["slots"] + got["physics.lep"]["slots"] == pytest.approx(30)


def test_quotas_scale_down_in_proportion_when_the_pool_shrinks() -> None:
    got = _physics(hep=60, lep=60, chem=60, physics_surplus=False, capacity=15)
    assert got["physics"]["slots"] == pytest.approx(10)
    assert got["chemistry"]["slots"] == pytest.approx(5)


# ---- Volcano proportion ------------------------------------------------------------------------
# Source: Volcano pkg/scheduler/plugins/proportion (OnSessionOpen): deserved grows by
# remaining x weight / total weight, clipped to capability and request, at least the guarantee;
# queues whose request is met leave, and the remainder is shared again. Worked by hand:
# 100 cpus; a (w1, request 80, guarantee 30), b (w2, request 100, cap 40), c (w1, request 10).
# Guarantees first: a=30, remaining 70 split 1:2:1 -> a+17.5, b=35, c=10 (clipped, leaves 7.5)
# -> c full; 7.5 split a:b = 1:2 -> a+2.5=50, b=40 (cap; 2.5 back) -> a=52.5... computed exactly:
# final a = 100 - 40 - 10 = 50, b = 40 (cap), c = 10 (request).


def test_volcano_style_proportion_water_filling_with_weights_guarantees_and_caps() -> None:
    got = water_fill(100, floors=[30, 0, 0], ceilings=[80, 40, 10], weights=[1, 2, 1])
    assert got == pytest.approx([50, 40, 10])
    assert sum(got) == pytest.approx(100)


def test_proportion_deserved_drives_allocation_in_a_session() -> None:
    # The same numbers through the proportion plugin: 100 one-cpu nodes, three queues.
    nodes = [node(f"n{i}") for i in range(100)]
    jobs = [job(f"a{i}", queue="a", submit=i) for i in range(80)]
    jobs += [job(f"b{i}", queue="b", submit=i) for i in range(100)]
    jobs += [job(f"c{i}", queue="c", submit=i) for i in range(10)]
    queues = {
        "a": QueueInfo("a", weight=1, guarantee={"cpu": 30}),
        "b": QueueInfo("b", weight=2, cap={"cpu": 40}),
        "c": QueueInfo("c", weight=1),
    }
    d = run(conf("allocate", ["predicates", "proportion"]), Snapshot(nodes, jobs, queues))
    per_queue = {"a": 0, "b": 0, "c": 0}
    for b in d.binds:
        per_queue[b.job[0]] += 1
    assert per_queue == {"a": 50, "b": 40, "c": 10}


# ---- DRF ------------------------------------------------------------------------------------------
# Source: Ghodsi et al., "Dominant Resource Fairness", NSDI 2011, section 4: a system with 9 CPUs
# and 18 GB; user A runs tasks of <1 CPU, 4 GB>, user B <3 CPUs, 1 GB>. DRF gives A three tasks
# and B two; both end with a dominant share of 2/3.


def test_drf_papers_two_user_example() -> None:
    nodes = [node("big", cpu=9, memory=18 * GI)]
    a = job("A", tasks=10, cpu=1, memory=4 * GI, min_available=1, submit=-10)
    b = job("B", tasks=10, cpu=3, memory=1 * GI, min_available=1, submit=-9)
    d = run(conf("allocate", ["drf", "predicates"]), Snapshot(nodes, [a, b]))
    assert bound(d) == {"A": 3, "B": 2}


# ---- EASY backfilling ----------------------------------------------------------------------------
# Source: Mu'alem & Feitelson, "Utilization, Predictability, Workloads, and User Runtime Estimates
# in Scheduling the IBM SP2 with Backfilling" (IEEE TPDS 2001), section 2: EASY reserves for the
# first queued job only; the "shadow time" is when it can start, "extra nodes" are those it will
# not need then; a later job may start now if it ends by the shadow time or uses only extra nodes.
# Worked by hand: 10 one-cpu nodes, R runs on 6 of them until t=100. Queue: J1 8 nodes x 50 s,
# J2 4 x 200, J3 2 x 300, J4 2 x 80, J5 1 x 500. J1 cannot start: shadow time 100, extra nodes 2.
# J2 ends after the shadow time and needs more than the extra nodes: waits. J3 fits in the extra
# nodes: starts. J4 ends by the shadow time: starts on the other 2 free nodes. J5: nothing is left.

BACKFILL_TIERS = (["priority", "gang"], ["predicates", {"name": "reservation", "arguments": {"after": 0}}])


def _easy_world(now: float = 0.0) -> Snapshot:
    """The example at time ``now``; J1 was submitted 9 s before it."""
    nodes = [node(f"n{i}") for i in range(10)]
    r = run_on(job("R", tasks=6), [f"n{i}" for i in range(6)], start=now - 10, end=now + 100)
    occupy(nodes, [r])
    queue = [
        job("J1", tasks=8, walltime=50, submit=now - 9),
        job("J2", tasks=4, walltime=200, submit=now - 8),
        job("J3", tasks=2, walltime=300, submit=now - 7),
        job("J4", tasks=2, walltime=80, submit=now - 6),
        job("J5", tasks=1, walltime=500, submit=now - 5),
    ]
    return Snapshot(nodes, [r, *queue])


def test_easy_backfill_with_shadow_time_and_extra_nodes() -> None:
    d = run(conf("allocate, backfill", *BACKFILL_TIERS, backfill={"depth": 1}), _easy_world())
    assert bound(d) == {"J3": 2, "J4": 2}
    [res] = d.reservations
    assert res.job == "J1" and res.start == 100 and sum(res.nodes.values()) == 8
    j3_nodes = {b.node for b in d.binds if b.job == "J3"}
    assert not j3_nodes & set(res.nodes)  # J3 runs past the shadow time: only on extra nodes
    assert {r.code for r in d.reasons["J2"]} & {"reservation", "gang"}


def test_strict_order_lets_nothing_jump_the_blocked_head() -> None:
    d = run(conf("allocate, backfill", *BACKFILL_TIERS, backfill={"enabled": False}), _easy_world())
    assert d.binds == []
    assert [r.job for r in d.reservations] == ["J1"]


def test_reservation_after_a_waiting_threshold() -> None:
    tiers = (["priority", "gang"], ["predicates", {"name": "reservation", "arguments": {"after": "10m"}}])
    c = conf("allocate, backfill", *tiers)
    young = run(c, _easy_world())  # J1 waited 9 s: no reservation, the next job that fits starts
    assert young.reservations == [] and bound(young) == {"J2": 4}
    world = _easy_world()
    for j in world.jobs:
        j.submit_time -= 600  # the same queue, each job 10 minutes older: J1 reserves, EASY as above
    old = run(c, world)
    assert [r.job for r in old.reservations] == ["J1"] and bound(old) == {"J3": 2, "J4": 2}


# ---- Conservative backfilling ---------------------------------------------------------------------
# Source: same paper, section 2: conservative backfilling gives every queued job a reservation and
# lets a job start now only if it delays none of them; EASY protects only the first. Worked by
# hand: 6 one-cpu nodes, R on 3 of them until t=10. A 4 x 10 s, B 5 x 10 s, C 2 x 25 s.
# A reserves [10, 20). B cannot start now (3 free) and, conservatively, reserves [20, 30) on 5 of
# the 6 nodes. C, now, would hold 2 nodes until 25: EASY lets it run on the two nodes A leaves
# free; conservative does not, since every pair of nodes meets B's reservation before t=25.


def _conservative_world() -> Snapshot:
    nodes = [node(f"n{i}") for i in range(6)]
    r = run_on(job("R", tasks=3), ["n0", "n1", "n2"], start=-5, end=10)
    occupy(nodes, [r])
    queue = [
        job("A", tasks=4, walltime=10, submit=-9),
        job("B", tasks=5, walltime=10, submit=-8),
        job("C", tasks=2, walltime=25, submit=-7),
    ]
    return Snapshot(nodes, [r, *queue])


def test_conservative_backfill_protects_every_reservation() -> None:
    d = run(conf("allocate, backfill", *BACKFILL_TIERS, backfill={"depth": "all"}), _conservative_world())
    starts = {r.job: r.start for r in d.reservations}
    assert starts["A"] == 10 and starts["B"] == 20
    assert "C" not in bound(d)
    assert starts["C"] >= 30  # C too is given a slot, after B


def test_easy_lets_the_same_job_delay_the_second_in_line() -> None:
    d = run(conf("allocate, backfill", *BACKFILL_TIERS, backfill={"depth": 1}), _conservative_world())
    assert [r.job for r in d.reservations] == ["A"]
    assert bound(d) == {"C": 2}
