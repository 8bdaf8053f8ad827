"""Metrics on small schedules whose every number is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from federation.simulator.metrics import bounded_slowdown, compute_metrics, jain_index, percentile
from federation.simulator.records import JobOutcome

CAPACITY = {"cpu": 4.0}


def run(
    id: str, tenant: str, submit: float, start: float, end: float, cpu: float, state: str = "Succeeded"
) -> JobOutcome:
    return JobOutcome(
        id=id, tenant=tenant, queue="q", submit=submit, state=state, resources={"cpu": cpu}, start=start, end=end
    )


# A 4-CPU federation:
#   A  tenant a  submit 0   start 0    end 100  2 cpu   wait 0   run 100
#   B  tenant a  submit 0   start 50   end 55   1 cpu   wait 50  run 5
#   C  tenant b  submit 10  start 100  end 200  4 cpu   wait 90  run 100
#   D  tenant b  submit 20  Rejected (never ran)
#   E  tenant c  submit 30  start 40   end 60   1 cpu   wait 10  run 20, Cancelled while running
SCHEDULE = [
    run("A", "a", 0, 0, 100, 2),
    run("B", "a", 0, 50, 55, 1),
    run("C", "b", 10, 100, 200, 4),
    JobOutcome(id="D", tenant="b", queue="q", submit=20, state="Rejected", resources={"cpu": 8}),
    run("E", "c", 30, 40, 60, 1, state="Cancelled"),
]


def test_counts_by_outcome() -> None:
    m = compute_metrics(SCHEDULE, CAPACITY)
    assert (m["jobs"], m["started"], m["completed"]) == (5, 4, 3)  # completed: A, B, C (E was cancelled)
    assert (m["rejected"], m["cancelled"], m["failed"], m["unschedulable"]) == (1, 1, 0, 0)


def test_waits_over_started_jobs() -> None:
    m = compute_metrics(SCHEDULE, CAPACITY)
    # Waits of A, B, C, E: 0, 50, 90, 10. Mean = 150 / 4 = 37.5.
    assert m["mean_wait"] == pytest.approx(37.5)
    # Nearest rank: ceil(0.95 * 4) = 4th of [0, 10, 50, 90] = 90 (linear interpolation would say 84).
    assert m["p95_wait"] == 90
    assert m["max_wait"] == 90


def test_bounded_slowdown_over_completed_jobs() -> None:
    m = compute_metrics(SCHEDULE, CAPACITY)
    # A: max(1, (0 + 100) / 100) = 1;  B: (50 + 5) / max(5, 10) = 5.5;  C: (90 + 100) / 100 = 1.9.
    # Mean = 8.4 / 3 = 2.8 (E is cancelled, so not counted).
    assert m["mean_bounded_slowdown"] == pytest.approx(2.8)


def test_utilization_and_makespan() -> None:
    m = compute_metrics(SCHEDULE, CAPACITY)
    # Span = last end 200 - first submit 0. CPU-seconds used: A 2*100 + B 1*5 + C 4*100 + E 1*20 = 625
    # (the cancelled job occupied its CPU too). 625 / (4 * 200) = 0.78125.
    assert m["makespan"] == 200
    assert m["utilization"] == {"cpu": pytest.approx(0.78125)}


def test_tenant_table_and_jain_with_equal_fair_shares() -> None:
    m = compute_metrics(SCHEDULE, CAPACITY)
    # Usage in dominant-share-seconds (share of the 4 CPUs times seconds):
    #   a = 0.5 * 100 + 0.25 * 5 = 51.25;  b = 1.0 * 100 = 100;  c = 0.25 * 20 = 5;  total 156.25.
    #   Shares: a 0.328, b 0.64, c 0.032.
    tenants = m["tenants"]
    assert sorted(tenants) == ["a", "b", "c"]
    assert tenants["a"]["usage_share"] == pytest.approx(0.328)
    assert tenants["b"]["usage_share"] == pytest.approx(0.64)
    assert tenants["c"]["usage_share"] == pytest.approx(0.032)
    assert (tenants["b"]["jobs"], tenants["b"]["completed"], tenants["b"]["mean_wait"]) == (2, 1, 90)
    assert tenants["a"]["mean_wait"] == pytest.approx(25)  # (0 + 50) / 2
    assert tenants["a"]["fair_share"] == pytest.approx(1 / 3)
    # x = share / (1/3): 0.984, 1.92, 0.096; sum x = 3; sum x^2 = 0.968256 + 3.6864 + 0.009216 = 4.663872.
    # Jain = 3^2 / (3 * 4.663872) = 0.643242...
    assert m["jain_fairness"] == pytest.approx(9 / (3 * 4.663872))


def test_jain_is_one_when_usage_follows_given_fair_shares() -> None:
    # a uses 2 CPUs for 100 s, b 1 CPU for 100 s: usage 2:1, and the fair shares 2:1 (renormalised to
    # 2/3 and 1/3), so x = 1 for both and the index is exactly 1.
    records = [run("1", "a", 0, 0, 100, 2), run("2", "b", 0, 0, 100, 1)]
    m = compute_metrics(records, CAPACITY, fair_shares={"a": 2, "b": 1, "absent": 5})
    assert m["jain_fairness"] == pytest.approx(1.0)
    assert m["tenants"]["a"]["fair_share"] == pytest.approx(2 / 3)
    # With equal fair shares the same usage is unfair: x = 4/3, 2/3 -> 4 / (2 * (16/9 + 4/9)) = 0.9.
    assert compute_metrics(records, CAPACITY)["jain_fairness"] == pytest.approx(0.9)


def test_jain_of_one_tenant_taking_everything_is_one_over_n() -> None:
    never_ran = [JobOutcome(id=t, tenant=t, queue="q", submit=0, state="Unschedulable") for t in ("b", "c", "d")]
    m = compute_metrics([run("1", "a", 0, 0, 10, 1), *never_ran], CAPACITY)
    assert m["jain_fairness"] == pytest.approx(1 / 4)


def test_missing_fair_share_is_an_error() -> None:
    with pytest.raises(ValueError, match="tenant\\(s\\) b"):
        compute_metrics([run("1", "a", 0, 0, 10, 1), run("2", "b", 0, 0, 10, 1)], CAPACITY, fair_shares={"a": 1})


def test_resources_outside_capacity_are_not_counted() -> None:
    # The job holds 2 of 4 CPUs for the whole span of 10 s: cpu utilization 0.5; its gpu is not a
    # federation resource here, so it neither appears nor changes the dominant share.
    job = JobOutcome(
        id="1", tenant="a", queue="q", submit=0, state="Succeeded", resources={"cpu": 2, "gpu": 1}, start=0, end=10
    )
    m = compute_metrics([job], CAPACITY)
    assert m["utilization"] == {"cpu": pytest.approx(0.5)}


def test_no_records_gives_empty_populations() -> None:
    m = compute_metrics([], CAPACITY)
    assert m["jobs"] == 0
    assert (m["mean_wait"], m["p95_wait"], m["mean_bounded_slowdown"], m["makespan"], m["jain_fairness"]) == (
        None,
        None,
        None,
        None,
        None,
    )
    assert m["utilization"] == {"cpu": None}


@pytest.mark.parametrize(("p", "expected"), [(5, 15), (30, 20), (40, 20), (50, 35), (100, 50)])
def test_percentile_is_nearest_rank(p: float, expected: float) -> None:
    # The textbook nearest-rank example: rank = ceil(p/100 * 5); e.g. p30 -> ceil(1.5) = 2nd value = 20.
    assert percentile([50, 15, 40, 20, 35], p) == expected


@pytest.mark.parametrize("p", [0, -1, 101])
def test_percentile_rejects_out_of_range(p: float) -> None:
    with pytest.raises(ValueError):
        percentile([1.0], p)


@pytest.mark.parametrize(
    ("wait", "run_s", "expected"),
    [
        (0, 0, 1.0),  # (0 + 0) / 10 = 0, bounded below by 1
        (30, 0, 3.0),  # a zero-length job counts as 10 s: 30 / 10
        (50, 5, 5.5),  # (50 + 5) / 10
        (100, 100, 2.0),  # (100 + 100) / 100
    ],
)
def test_bounded_slowdown(wait: float, run_s: float, expected: float) -> None:
    assert bounded_slowdown(wait, run_s) == pytest.approx(expected)


def test_jain_index_undefined_without_usage() -> None:
    assert jain_index([]) is None
    assert jain_index([0.0, 0.0]) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"state": "Running"},
        {"end": 5.0},
        {"start": -1.0, "end": 5.0},
        {"start": 10.0, "end": 5.0},
    ],
)
def test_job_record_rejects_impossible_records(kwargs: dict[str, object]) -> None:
    fields: dict[str, object] = {"id": "x", "tenant": "t", "queue": "q", "submit": 0.0, "state": "Succeeded"}
    with pytest.raises(ValueError):
        JobOutcome(**(fields | kwargs))  # type: ignore[arg-type]


def test_job_record_wait_and_runtime() -> None:
    ran = run("1", "a", 5, 15, 45, 1)
    assert (ran.wait, ran.runtime, ran.completed) == (10, 30, True)
    pending = JobOutcome(id="2", tenant="a", queue="q", submit=5, state="Cancelled")
    assert (pending.wait, pending.runtime, pending.completed) == (None, None, False)
