"""The framework itself: one conf vocabulary at both levels, rollback, reasons, timings, conf."""

from __future__ import annotations

from pathlib import Path

import pytest
from policy_builders import GI, bound, conf, job, node, occupy, run, run_on

from policies import (
    ManualClock,
    NodeInfo,
    NodeShape,
    PendingIndex,
    QueueInfo,
    Reason,
    Snapshot,
    TaskStatus,
    Usage,
    close_session,
    load_conf,
    open_session,
)
from policies.framework.statement import Statement

CONFIGS = Path(__file__).resolve().parents[2] / "configs"


def test_one_conf_vocabulary_drives_a_local_and_a_global_session() -> None:
    local = load_conf(CONFIGS / "scheduler.yaml")
    global_ = load_conf(CONFIGS / "scheduler-global.yaml")
    assert local.actions == ["enqueue", "allocate", "preempt", "backfill"]
    assert global_.placement == "job" and local.placement == "task"

    # Local: nodes of one cluster; a gang of 4 x 8 cpus spreads over 16-cpu nodes.
    nodes = [node(f"n{i}", cpu=16, memory=64) for i in range(3)]
    d = run(local, Snapshot(nodes, [job("train", tasks=4, cpu=8, memory=8)]))
    assert bound(d) == {"train": 4} and len({b.node for b in d.binds}) == 2

    # Global: "nodes" are clusters summarised by node shape; the whole job lands on one cluster
    # that has room on its nodes (c0 has 32 idle cpus in total but no node with 8 free).
    c0 = NodeInfo("c0", {}, shapes=[NodeShape({"cpu": 16.0, "memory": 64.0}, {"cpu": 4.0, "memory": 64.0}, 8)])
    c1 = NodeInfo("c1", {}, shapes=[NodeShape({"cpu": 16.0, "memory": 64.0}, {"cpu": 16.0, "memory": 64.0}, 2)])
    index = PendingIndex()
    index.add(job("train", tasks=4, cpu=8, memory=8))
    d = run(global_, Snapshot([c0, c1], [], pending=index))
    assert {b.node for b in d.binds} == {"c1"} and len(d.binds) == 4
    assert len(index) == 1 and index.get("train") is not None  # the caller's index is untouched


def test_placing_many_jobs_on_a_few_clusters_keeps_the_placers_heaps_to_their_live_entries() -> None:
    """Each placement changes a cluster, whose old heap entry goes stale; stale entries are dropped
    as they are met, and all at once when they would outnumber the clusters, so a cycle that places
    thousands of jobs does not scan thousands of dead entries for each."""
    clusters = [NodeInfo(f"c{i}", {}, shapes=[NodeShape({"cpu": 32.0}, {"cpu": 32.0}, 100)]) for i in range(3)]
    index = PendingIndex()
    for i in range(500):
        index.add(job(f"j{i}", cpu=1, submit=float(i)))
    # Packing: a cluster scores higher as it fills, so its stale entries sink below its fresh one.
    packing = conf("allocate", ["gang"], ["predicates", {"name": "binpack"}], placement="job")
    ssn = open_session(packing, Snapshot(clusters, [], pending=index), ManualClock(0))
    ssn.run()
    assert len(close_session(ssn).binds) == 500
    (shape,) = ssn.placer._shapes.values()
    assert len(shape.heap) <= 2 * len(clusters) + 8
    assert {i for _, i, _ in shape.heap} == {0, 1, 2}


def test_an_uncommitted_gang_returns_everything_it_took() -> None:
    nodes = [node("n0", cpu=4), node("n1", cpu=4)]
    gang = job("g", tasks=3, cpu=3)  # two fit, the third does not: the gang must not start
    ssn = open_session(conf("allocate", ["gang"], ["predicates"]), Snapshot(nodes, [gang]), ManualClock(0))
    before = [dict(n.idle) for n in ssn.nodes]
    stmt = Statement(ssn)
    assert ssn.placer.place(gang, stmt)
    assert ssn.ready_count(gang) == 2 and not ssn.job_ready(gang)
    stmt.discard()
    assert [dict(n.idle) for n in ssn.nodes] == before
    assert all(t.status == TaskStatus.PENDING for t in gang.tasks) and ssn.ready_count(gang) == 0
    ssn.run()
    d = close_session(ssn)
    assert d.binds == [] and d.reasons["g"][-1].code == "gang"


def test_cluster_take_and_give_restore_the_exact_node_shape() -> None:
    cluster = NodeInfo(
        "c", {}, shapes=[NodeShape({"cpu": 8.0}, {"cpu": 8.0}, 1), NodeShape({"cpu": 8.0}, {"cpu": 2.0}, 1)]
    )
    token = cluster.take({"cpu": 2.0})  # best fit: the node with 2 free
    assert [s.count for s in cluster.shapes or []] == [1, 0, 1]
    assert not cluster.fits({"cpu": 9.0}) and cluster.fits({"cpu": 8.0})
    cluster.give({"cpu": 2.0}, token)
    assert [s.count for s in cluster.shapes or []] == [1, 1, 0] and cluster.idle == {"cpu": 10.0}
    assert cluster.packs([({"cpu": 8.0}, 1), ({"cpu": 2.0}, 1)]) and not cluster.packs([({"cpu": 6.0}, 2)])


def test_closing_a_session_leaves_the_callers_snapshot_unchanged() -> None:
    nodes = [node("n0", cpu=8)]
    jobs = [job("a", tasks=2, cpu=2), job("b", tasks=2, cpu=2)]
    d = run(conf("allocate", ["gang"], ["predicates"]), Snapshot(nodes, jobs))
    assert len(d.binds) == 4
    assert all(t.status == TaskStatus.PENDING and t.node == "" for j in jobs for t in j.tasks)
    assert nodes[0].idle == {"cpu": 8.0}


def test_reasons_name_the_predicate_that_holds_each_job() -> None:
    """The nearest miss holds a job: a node that would take it once uncordoned says more than one that
    is too small; every node is counted by why it missed."""
    nodes = [node("n0", cpu=4, labels={"region": "eu"}), node("n1", cpu=8, unschedulable=True)]
    jobs = [
        job("wrong-region", cpu=1, cluster_selector={"region": "us"}),
        job("too-big", cpu=64),
        job("cordoned", cpu=6),
        job("gang", tasks=3, cpu=2, submit=5),
    ]
    d = run(conf("allocate", ["gang"], ["predicates"]), Snapshot(nodes, jobs))
    assert d.reasons["wrong-region"][0] == Reason(
        "labels", "allocate", "0/2 nodes can take cpu=1 now: 2 not matching its clusterSelector"
    )
    assert d.reasons["too-big"][0] == Reason("too-big", "allocate", "0/2 nodes can take cpu=64 now: 2 too small")
    assert d.reasons["cordoned"][0] == Reason(
        "cordoned", "allocate", "0/2 nodes can take cpu=6 now: 1 cordoned, 1 too small"
    )
    assert d.reasons["gang"][-1].code == "gang"
    assert set(d.plugin_seconds) == {"gang", "predicates"} and d.plugin_seconds["predicates"] > 0


def test_a_job_whose_matching_node_is_busy_waits_on_room_however_many_nodes_lack_its_labels() -> None:
    """Issue 21: the commonest miss (labels, on two nodes) named the job's reason, though the one node
    with its labels would take it once free."""
    nodes = [node("n0", 4, 8 * GI, labels={"region": "eu"}), node("us1", 4, 8 * GI), node("us2", 4, 8 * GI)]
    running = run_on(job("r", cpu=3, cluster_selector={"region": "eu"}), ["n0"])
    occupy(nodes, [running])
    waiting = job("w", cpu=2, memory=0.25 * GI, cluster_selector={"region": "eu"})
    d = run(conf("allocate", ["predicates"]), Snapshot(nodes, [running, waiting]))
    assert d.reasons["w"] == [
        Reason(
            "insufficient",
            "allocate",
            "0/3 nodes can take cpu=2, memory=256Mi now: 1 short of room, 2 not matching its clusterSelector",
        )
    ]


def test_a_whole_job_placement_counts_clusters_and_says_what_the_whole_job_needs() -> None:
    """At the global level each node is a cluster (node shapes): the reason counts clusters, and a
    cluster that fits one task but not the whole job is short of room, not a label mismatch."""

    def cluster(name: str, idle: float, labels: dict[str, str]) -> NodeInfo:
        return NodeInfo(name, {}, labels=labels, shapes=[NodeShape({"cpu": 4.0}, {"cpu": idle}, 2)])

    clusters = [cluster("eu", 2.0, {"region": "eu"}), cluster("us1", 4.0, {}), cluster("us2", 4.0, {})]
    gang = job("g", tasks=3, cpu=2, cluster_selector={"region": "eu"})
    d = run(conf("allocate", ["gang", "predicates"], placement="job"), Snapshot(clusters, [gang]))
    assert d.reasons["g"] == [
        Reason(
            "insufficient",
            "allocate",
            "0/3 clusters can take the whole job (cpu=6) now: 1 short of room for all of it, "
            "2 not matching its clusterSelector",
        )
    ]


def test_conf_loader_reads_volcano_vocabulary_and_rejects_unknown_names() -> None:
    c = load_conf(
        """
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enableJobOrder: false
    arguments: {preemptMode: whole}
configurations:
- name: backfill
  arguments: {depth: 3}
"""
    )
    assert c.actions == ["enqueue", "allocate", "backfill"]
    gang = c.plugin("gang")
    assert gang is not None and gang.disabled_hooks == {"job_order"} and gang.arguments["preemptMode"] == "whole"
    assert c.action_arguments("backfill").number("depth", 1) == 3
    ssn = open_session(c, Snapshot([]), ManualClock(0))
    assert [e.plugin for e in ssn.hooks._table["job_order"]] == ["priority"]
    with pytest.raises(ValueError, match="unknown plugins"):
        load_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "nope"}]}]})
    with pytest.raises(ValueError, match="actions"):
        load_conf({"actions": "allocate, dance", "tiers": []})
    with pytest.raises(ValueError, match="names no hook"):
        load_conf({"actions": "allocate", "tiers": [{"plugins": [{"name": "gang", "enableDance": False}]}]})
    assert not c.hook_timing and load_conf({"actions": "allocate", "hookTiming": True}).hook_timing
    with pytest.raises(ValueError, match="hookTiming must be true or false, got 'yes'"):
        load_conf({"actions": "allocate", "hookTiming": "yes"})


def test_fair_share_serves_the_tenant_with_the_better_priority_and_respins_leftovers() -> None:
    # 12 one-cpu nodes; tenants heavy (RUP 30) and light (RUP 10) each want 12: slices go 1:3.
    nodes = [node(f"n{i}") for i in range(12)]
    jobs = [job(f"h{i}", tenant="heavy", submit=i) for i in range(12)] + [
        job(f"l{i}", tenant="light", submit=i) for i in range(12)
    ]
    usage = Usage(tenant_rup={"heavy": 30.0, "light": 10.0})
    d = run(conf("allocate", ["fairshare", "predicates"]), Snapshot(nodes, jobs, usage=usage))
    got = {"h": 0, "l": 0}
    for b in d.binds:
        got[b.job[0]] += 1
    assert got == {"h": 3, "l": 9}
    # If light wants only 2, its unused slice is spun again to heavy: nothing stays idle.
    d = run(conf("allocate", ["fairshare", "predicates"]), Snapshot(nodes, jobs[:12] + jobs[12:14], usage=usage))
    assert len(d.binds) == 12


def test_fair_share_hard_quota_holds_even_when_the_pie_is_spun_again() -> None:
    nodes = [node(f"n{i}") for i in range(10)]
    queues = {"capped": QueueInfo("capped", cap={"cpu": 3.0}), "other": QueueInfo("other")}
    jobs = [job(f"c{i}", queue="capped", submit=i) for i in range(10)]
    d = run(conf("allocate", ["fairshare", "predicates"]), Snapshot(nodes, jobs, queues))
    assert len(d.binds) == 3 and d.reasons["c3"][-1].code == "cap"


def test_proportion_says_the_deserved_share_as_a_quantity() -> None:
    """Two equal queues on 8 cpu and 8Gi deserve 4Gi each: a second 3Gi job would exceed it (the
    reason read "(4.29497e+09)" before)."""
    nodes = [node("n0", 8, 8 * GI)]
    queues = {"a": QueueInfo("a"), "b": QueueInfo("b")}
    jobs = [job(f"{q}{i}", queue=q, cpu=1, memory=3 * GI, submit=i) for q in "ab" for i in range(2)]
    d = run(conf("allocate", ["proportion", "predicates"]), Snapshot(nodes, jobs, queues))
    assert bound(d) == {"a0": 1, "b0": 1}
    assert d.reasons["a1"] == [Reason("overused", "proportion", "queue a would exceed its deserved memory (4Gi)")]


def test_pending_index_feeds_a_session_in_priority_then_submit_order() -> None:
    index = PendingIndex()
    for i, prio in enumerate([0, 5, 5, 1]):
        index.add(job(f"j{i}", priority=prio, submit=float(i)))
    d = run(conf("allocate", ["priority"], ["predicates"]), Snapshot([node("n0", cpu=2)], [], pending=index))
    assert [b.job for b in d.binds] == ["j1", "j2"]


def test_reclaim_takes_back_borrowed_capacity_but_not_within_the_grace_period() -> None:
    nodes = [node(f"n{i}") for i in range(4)]
    borrowers = [run_on(job(f"b{i}", queue="lender"), [f"n{i}"], start=-1000) for i in range(4)]
    borrowers[3].start_time = -10  # started 10 s ago: inside a 60 s grace period
    borrowers[3].tasks[0].start_time = -10
    occupy(nodes, borrowers)
    owner = [job(f"o{i}", queue="owner", submit=-5) for i in range(3)]
    queues = {
        "owner": QueueInfo("owner", guarantee={"cpu": 2.0}),
        "lender": QueueInfo("lender", guarantee={"cpu": 1.0}),
    }
    c = conf(
        "allocate, reclaim",
        ["priority", "gang", "conformance"],
        ["predicates", "proportion"],
        reclaim={"gracePeriod": "60s"},
    )
    d = run(c, Snapshot(nodes, [*borrowers, *owner], queues))
    evicted = {e.job for e in d.evictions}
    assert "b3" not in evicted
    assert len(evicted) == 2  # owner deserves 2 of 4 cpus; lender keeps its deserved 2
    assert all(e.reason == "reclaimed" for e in d.evictions)
    limited = run(
        conf(
            "allocate, reclaim", ["gang"], ["predicates", "proportion"], reclaim={"gracePeriod": 0, "maxEvictions": 1}
        ),
        Snapshot(nodes, [*borrowers, *owner], queues),
    )
    assert len(limited.evictions) == 1


def test_preempt_whole_gang_mode_takes_the_gang_down_rather_than_below_min_available() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    victim = run_on(job("v", tasks=3, min_available=3, priority=0), ["n0", "n1", "n2"], start=-100)
    occupy(nodes, [victim])
    urgent = job("u", tasks=1, priority=9, submit=-1)
    for mode, expected in (("whole", {"v/t-0", "v/t-1", "v/t-2"}), ("down-to-min", set())):
        tiers = (["priority", {"name": "gang", "arguments": {"preemptMode": mode}}], ["predicates"])
        d = run(conf("allocate, preempt", *tiers), Snapshot(nodes, [victim, urgent]))
        assert {e.task for e in d.evictions} == expected, mode
        assert bool(d.pipelined) == bool(expected)


def test_hierarchical_drf_serves_the_least_served_subtree_first() -> None:
    # a holds 4 of 8 cpus through a.x; b holds nothing. Although leaf a.y holds nothing either, the
    # free half goes to b: at the top level a already has its half (equal weights).
    nodes = [node(f"n{i}") for i in range(8)]
    held = [run_on(job(f"h{i}", queue="a.x"), [f"n{i}"], start=-10) for i in range(4)]
    occupy(nodes, held)
    pending = [job(f"ay{i}", queue="a.y", submit=i) for i in range(4)] + [
        job(f"by{i}", queue="b.y", submit=10 + i) for i in range(4)
    ]
    d = run(
        conf("allocate", [{"name": "drf", "arguments": {"hierarchy": True}}, "predicates"]),
        Snapshot(nodes, [*held, *pending]),
    )
    assert [b.job[:2] for b in d.binds] == ["by"] * 4


def test_reserve_books_without_backfilling() -> None:
    nodes = [node(f"n{i}") for i in range(2)]
    held = run_on(job("r", tasks=1, walltime=50), ["n0"], start=0, end=50)
    occupy(nodes, [held])
    tiers = (["priority", "gang"], ["predicates", {"name": "reservation", "arguments": {"after": 0}}])
    world = Snapshot(nodes, [held, job("big", tasks=2, walltime=10, submit=-2), job("small", walltime=5, submit=-1)])
    d = run(conf("allocate, reserve", *tiers), world)
    assert [(r.job, r.start) for r in d.reservations] == [("big", 50)]
    assert d.binds == []  # small would fit now, but only backfill may start it
    d = run(conf("allocate, backfill", *tiers), world)
    assert bound(d) == {"small": 1}  # ends at 5, long before big's reservation at 50
