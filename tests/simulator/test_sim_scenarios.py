"""configs/scenarios/*.yaml through ``fedq simulate``: start times worked out by hand in the comments.

Notation: "free" is idle cpus; a job's walltime is what reservations plan with, its runtime is when it
really ends. Every cluster here has one-cpu nodes unless said otherwise, so "n cpu" means "n nodes".
"""

from __future__ import annotations

from pathlib import Path

from sim_cli import simulate_scenario, starts


def test_easy_backfill_with_shadow_time_and_extra_nodes(tmp_path: Path) -> None:
    rows = simulate_scenario("easy", tmp_path)
    # 10 cpu. t=0: A (6 cpu, walltime 100) starts; free 4.
    # t=1: B needs 8 > 4 free: it is the head and reserves. A ends at 100 (its walltime), then 10 are
    #      free: B's shadow time is 100, and B leaves 10 - 8 = 2 extra cpus at 100.
    # t=2: C (2 cpu, walltime 200) ends at 202, after the shadow time, but 2 cpus <= the 2 extra ones:
    #      it starts now and never delays B.
    # t=3: D (2 cpu, walltime 90) ends at 93 <= 100: it starts now on the last 2 free cpus.
    # t=4: E (1 cpu) finds nothing free. At 93 (D ends) E would end at 293, past 100, and at 100 the
    #      extra cpus are C's: no. At 100 A ends and B starts (8 + C's 2 = 10): no room. At 150 B ends.
    assert starts(rows) == {"A": 0.0, "B": 100.0, "C": 2.0, "D": 3.0, "E": 150.0}
    assert {row["state"] for row in rows.values()} == {"Succeeded"}


def test_strict_order_without_backfill(tmp_path: Path) -> None:
    rows = simulate_scenario("easy", tmp_path, "--policy", "fcfs")
    # Same jobs, backfill off: nothing may start before B. At 100 A ends: B (8) and then C (2) fill
    # the 10 cpus; D waits behind them. At 150 B ends: D (2) and E (1) start.
    assert starts(rows) == {"A": 0.0, "B": 100.0, "C": 100.0, "D": 150.0, "E": 150.0}


def test_conservative_backfill_protects_every_reservation(tmp_path: Path) -> None:
    rows = simulate_scenario("conservative", tmp_path)
    # 6 cpu, every walltime = runtime. t=0: A (4 cpu, 10 s) runs [0, 10); free 2.
    # t=1: B (5 cpu) reserves [10, 20). t=2: C (6 cpu) reserves the first 10 s with 6 free: [20, 30).
    # Free cpus over time with both reservations: [3,10) 2, [10,20) 1, [20,30) 0, from 30 on 6.
    # t=3: D (1 cpu, 30 s) started now would hold a cpu through [20, 30), where C needs all 6: no.
    #      Its own reservation is the first 30 s window with 1 cpu free: from 30.
    # So B starts at 10, C at 20 (B ends), D at 30 (C ends).
    assert starts(rows) == {"A": 0.0, "B": 10.0, "C": 20.0, "D": 30.0}


def test_easy_lets_a_backfilled_job_delay_the_second_in_line(tmp_path: Path) -> None:
    rows = simulate_scenario("conservative", tmp_path, "--policy", "easy")
    # EASY protects only B: at 10 B uses 5 of the 6 cpus, so 1 is extra, and D (1 cpu, [3, 33))
    # takes it at t=3. B still starts at 10. At 20 B ends, but with D running only 5 are free for C
    # (6 cpu): C waits until D ends at 33.
    assert starts(rows) == {"A": 0.0, "B": 10.0, "C": 33.0, "D": 3.0}


def test_gang_waits_for_room_on_nodes_not_just_in_total(tmp_path: Path) -> None:
    rows = simulate_scenario("gang", tmp_path)
    # Two nodes of 4 cpu. t=0: A (one 2-cpu task) on one node: free 2 there and 4 on the other.
    # t=1: G is two 3-cpu tasks: 6 cpus are free in total, but only one node has 3 free. The gang
    #      starts whole or not at all: it waits for A (walltime 100) and reserves 6 cpus from 100.
    # t=2: B (one 4-cpu task, walltime 200) fits the empty node now, but would hold it past 100, when
    #      G needs 3 cpus on each node: EASY keeps it back. At 100 G starts (both nodes, 2 cpus left,
    #      one per node: still no room for B); at 150 G ends and B starts.
    assert starts(rows) == {"A": 0.0, "G": 100.0, "B": 150.0}


def test_cluster_selector(tmp_path: Path) -> None:
    rows = simulate_scenario("selector", tmp_path)
    # east (region us): 2 cpu; west (region eu): 5 cpu; every job 100 s, submitted at 0 in file order.
    # J1 (us, 2) takes east. J2 (us, 1) only matches east, which is full: it waits for J1, even though
    # west has room, and starts at 100. J3 (eu, 4) and J4 (no selector, 1) fill west at 0.
    # J5 asks for region ap: no cluster has that label, so it can never run.
    assert starts(rows) == {"J1": 0.0, "J2": 100.0, "J3": 0.0, "J4": 0.0, "J5": None}
    assert {job: row["cluster"] for job, row in rows.items()} == {
        "J1": "east",
        "J2": "east",
        "J3": "west",
        "J4": "west",
        "J5": "",
    }
    assert rows["J5"]["state"] == "Unschedulable"


def test_jobs_too_big_are_unschedulable_and_bad_submits_rejected(tmp_path: Path) -> None:
    rows = simulate_scenario("too-big", tmp_path)
    # Two nodes of 4 cpu. BIGTASK has one 8-cpu task: no node is that big. BIGGANG needs 3 x 4 = 12 cpu
    # at once: more than the cluster's 8. NOQUEUE names a queue that does not exist; NOTALLOWED's tenant
    # may not use batch: the API would refuse both. None of them holds OK (2 x 4 cpu) back: it starts at 0.
    assert {job: row["state"] for job, row in rows.items()} == {
        "BIGTASK": "Unschedulable",
        "BIGGANG": "Unschedulable",
        "NOQUEUE": "Rejected",
        "NOTALLOWED": "Rejected",
        "OK": "Succeeded",
    }
    assert starts(rows) == {"BIGTASK": None, "BIGGANG": None, "NOQUEUE": None, "NOTALLOWED": None, "OK": 0.0}
    assert all(rows[job]["end"] == rows[job]["wait"] == "" for job in ("BIGTASK", "BIGGANG", "NOQUEUE"))


def test_walltime_is_enforced_and_early_ends_free_nodes_early(tmp_path: Path) -> None:
    rows = simulate_scenario("walltime", tmp_path)
    # 2 cpu. J1 (2 cpu) would run 500 s but its walltime is 100: killed at 100, Failed.
    # J2 (2 cpu, walltime 1000) reserves from 100 and starts then; it really runs 50 s: ends at 150.
    # J3 (1 cpu) could not start before (no free cpu) and starts when J2 ends, at 150.
    assert starts(rows) == {"J1": 0.0, "J2": 100.0, "J3": 150.0}
    assert (rows["J1"]["end"], rows["J1"]["state"]) == ("100.000", "Failed")
    assert (rows["J2"]["end"], rows["J3"]["end"]) == ("150.000", "160.000")


def test_fair_share_follows_decayed_usage(tmp_path: Path) -> None:
    rows = simulate_scenario("fairshare", tmp_path)
    # 3 cpu, half-life h = 100 s; RUP(t) = b*RUP + (1-b)*rate, b = 0.5^(dt/h), floor 0.5, rate in cpus.
    # AH (alice, 3 cpu) runs [0, 1000), BH (bob, 3 cpu) [1000, 1100).
    #   alice: from 0.5, rate 3 for 1000 s: b = 2^-10, RUP = 3 - 2.5/1024 = 2.99756; then rate 0 for
    #          100 s: b = 1/2, RUP = 1.49878 at 1100.
    #   bob:   0.5 until he first runs at 1000; rate 3 for 100 s: RUP = 0.5*0.5 + 0.5*3 = 1.75 at 1100.
    # At 1100 both wait with two 1-cpu jobs each; the 3 cpus are spun in proportion to 1/RUP:
    #   alice 3 * (1/1.49878) / (1/1.49878 + 1/1.75) = 1.616, bob 1.384.
    # Tenants are served most starved first (held / slice): b1 first (nobody holds anything yet, and
    # bob's jobs come first in the file), then a1 (alice 0 < bob 1/1.384), then alice again
    # (1/1.616 = 0.62 < bob's 0.72): a2. b2 starts when the first three end, at 1200.
    assert starts(rows) == {"AH": 0.0, "BH": 1000.0, "b1": 1100.0, "a1": 1100.0, "a2": 1100.0, "b2": 1200.0}


def test_fair_share_with_a_long_half_life_remembers_old_usage(tmp_path: Path) -> None:
    config = tmp_path / "federation.yaml"
    config.write_text("fairshare: {halfLife: 1d}\n", encoding="utf-8")
    rows = simulate_scenario("fairshare", tmp_path / "out", "--config", str(config))
    # h = 86400 s. alice: b = 2^(-1000/86400) = 0.992009 over [0, 1000): 0.5*b + 3*(1-b) = 0.519978;
    #   then rate 0 for 100 s, b = 0.999198: 0.519561 at 1100.
    # bob: 0.5 until 1000; rate 3 for 100 s: 0.5*0.999198 + 3*0.000802 = 0.502005 at 1100.
    # Now bob's RUP is the lower one, so his slice is the bigger one: 3 cpus in proportion to 1/RUP give
    # alice 1.474 and bob 1.526. b1 (file order), a1 (alice 0 < bob 1/1.526 = 0.655), then bob again
    # (0.655 < alice's 1/1.474 = 0.678): b2. a2 waits until 1200.
    assert starts(rows) == {"AH": 0.0, "BH": 1000.0, "b1": 1100.0, "a1": 1100.0, "b2": 1100.0, "a2": 1200.0}


def test_guarantee_reclaims_borrowed_capacity(tmp_path: Path) -> None:
    rows = simulate_scenario("reclaim", tmp_path)
    # 4 cpu; prod is guaranteed 2. s1..s4 (scratch, preemptible, 1000 s) borrow all 4 at 0.
    # At 100 p1, p2 (prod, 1 cpu each) arrive: prod holds 0 of its guaranteed 2, and the s jobs have
    # run 100 s >= the 30 s grace period, so reclaim evicts two of them. All four started at 0 with
    # equal priority, so the tie goes in dispatch order: s1 and s2. p1, p2 start at 100. s1, s2 go
    # back to the queue and start again when p1, p2 end (100 s) at 200; s3, s4 run on to 1000.
    assert starts(rows) == {"s1": 200.0, "s2": 200.0, "s3": 0.0, "s4": 0.0, "p1": 100.0, "p2": 100.0}
    assert (rows["s1"]["end"], rows["s3"]["end"]) == ("1200.000", "1000.000")


def test_cap_is_never_exceeded(tmp_path: Path) -> None:
    rows = simulate_scenario("cap", tmp_path)
    # 4 cpu; capped may hold 2. a1..a4 (1 cpu, 100 s) at 0: a1, a2 start, a3, a4 wait for them
    # although 2 cpus stay idle. o1 (another queue) at 50 takes an idle cpu at once. At 100 a1, a2
    # end and a3, a4 start.
    assert starts(rows) == {"a1": 0.0, "a2": 0.0, "a3": 100.0, "a4": 100.0, "o1": 50.0}


def test_a_job_runs_whole_on_one_cluster(tmp_path: Path) -> None:
    rows = simulate_scenario("clusters", tmp_path)
    # small: 2 cpu, big: 4 cpu. In file order at 0: X (3) fits only big; Y (2) then fits only small;
    # Z (1) fits big's last cpu. W (3) fits neither now: big frees 1 cpu at 50 (Z) and 4 at 100 (X),
    # small frees 2 at 200 (Y): W starts on big at 100. Q (5) needs more than any cluster has, though
    # the two have 6 together: a job never spans clusters, so Q is Unschedulable.
    assert starts(rows) == {"X": 0.0, "Y": 0.0, "Z": 0.0, "W": 100.0, "Q": None}
    assert [rows[job]["cluster"] for job in ("X", "Y", "Z", "W")] == ["big", "small", "big", "big"]
    assert rows["Q"]["state"] == "Unschedulable"


def test_priority_then_submit_time_then_file_order(tmp_path: Path) -> None:
    rows = simulate_scenario("order", tmp_path)
    # 1 cpu, every job 100 s, one tenant. z, a, m are submitted together at 0: they run in file order
    # although their ids sort a, m, z. low (submitted at 1) would follow m, but high (priority 10,
    # submitted at 5) overtakes everything still waiting when z ends at 100.
    assert starts(rows) == {"z": 0.0, "high": 100.0, "a": 200.0, "m": 300.0, "low": 400.0}


def test_backfill_between_tenants_does_not_leave_capacity_idle(tmp_path: Path) -> None:
    rows = simulate_scenario("tenant-backfill", tmp_path)
    # 4 cpu. A (alice, 2 cpu, walltime 100) runs from 0. B (bob, 4 cpu) reserves from 100. C (alice,
    # 1 cpu, walltime 60) at 2 would end by 62 < 100 on one of the 2 idle cpus, which bob cannot use
    # before 100 anyway: EASY backfills it at 2. B starts at 100 when A ends.
    assert starts(rows) == {"A": 0.0, "B": 100.0, "C": 2.0}
