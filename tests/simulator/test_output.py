"""jobs.csv, metrics.json and the PNG plots: exact formats, byte-identical reruns, non-blank images."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest
from matplotlib.image import imread

from federation.simulator.metrics import compute_metrics
from federation.simulator.output import format_resources, format_seconds, write_jobs_csv, write_metrics_json
from federation.simulator.plots import (
    PLOT_SIZE_PX,
    binned_integral,
    plot_tenant_shares,
    plot_utilization,
    plot_waits,
)
from federation.simulator.records import JobOutcome


def record(id: str, submit: float, start: float | None, end: float | None, state: str = "Succeeded") -> JobOutcome:
    return JobOutcome(
        id=id,
        tenant=f"t{int(id) % 3}",
        queue="root.q",
        cluster="c1" if start is not None else "",
        submit=submit,
        start=start,
        end=end,
        state=state,
        resources={"cpu": 1 + int(id) % 4},
    )


def schedule(n: int = 60) -> list[JobOutcome]:
    """Jobs on a 4-CPU machine, one after another: job i runs in [10 i, 10 i + 7]; every 10th is rejected."""
    rng = random.Random(7)
    jobs = []
    for i in range(n):
        submit = 10.0 * i - rng.uniform(0, 30) if i else 0.0
        if i % 10 == 9:
            jobs.append(record(str(i), max(submit, 0.0), None, None, state="Rejected"))
        else:
            jobs.append(record(str(i), max(submit, 0.0), 10.0 * i, 10.0 * i + 7, "Succeeded"))
    return jobs


def test_jobs_csv_format(tmp_path: Path) -> None:
    rows = [
        record("2", 5.25, 6.0, 9.5),
        record("1", 0.0, None, None, state="Unschedulable"),
        record("3", 5.25, 5.25, 5.25),
    ]
    expected = (
        "id,tenant,queue,cluster,submit,start,end,wait,state,resources\n"
        "1,t1,root.q,,0.000,,,,Unschedulable,cpu=2\n"
        "2,t2,root.q,c1,5.250,6.000,9.500,0.750,Succeeded,cpu=3\n"  # equal submits keep the given order: 2 then 3
        "3,t0,root.q,c1,5.250,5.250,5.250,0.000,Succeeded,cpu=4\n"
    )
    path = tmp_path / "jobs.csv"
    write_jobs_csv(rows, path)
    assert path.read_text() == expected


def test_jobs_csv_is_byte_identical_across_writes_and_input_order(tmp_path: Path) -> None:
    jobs = schedule()
    first, second, shuffled = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "c.csv"
    write_jobs_csv(jobs, first)
    write_jobs_csv(jobs, second)
    mixed = jobs[:]
    random.Random(1).shuffle(mixed)
    write_jobs_csv(mixed, shuffled)  # submits are all distinct here, so the order is fully determined
    assert len({j.submit for j in jobs}) == len(jobs)
    assert first.read_bytes() == second.read_bytes() == shuffled.read_bytes()
    assert len(first.read_text().splitlines()) == len(jobs) + 1


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, ""), (0.0, "0.000"), (-0.0, "0.000"), (-0.0004, "0.000"), (1.0005, "1.000"), (28765020.0, "28765020.000")],
)
def test_format_seconds(value: float | None, text: str) -> None:
    assert format_seconds(value) == text


def test_format_resources_in_base_units_sorted() -> None:
    assert format_resources({"memory": 1073741824.0, "cpu": 0.5, "nvidia.com/gpu": 2}) == (
        "cpu=0.5;memory=1073741824;nvidia.com/gpu=2"
    )
    assert format_resources({}) == ""


def test_metrics_json_sorted_rounded_and_identical(tmp_path: Path) -> None:
    metrics = compute_metrics(schedule(), {"cpu": 4.0})
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    write_metrics_json(metrics, first)
    write_metrics_json(metrics, second)
    assert first.read_bytes() == second.read_bytes()
    loaded = json.loads(first.read_text())
    assert list(loaded) == sorted(loaded)
    assert list(loaded["tenants"]["t0"]) == sorted(loaded["tenants"]["t0"])
    assert loaded["jobs"] == 60
    assert loaded["capacity"] == {"cpu": 4.0}  # what the dashboard measures jobs.csv's resources against


def test_metrics_json_rounds_floats_to_six_decimals(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    write_metrics_json({"b": 1 / 3, "a": {"y": [2 / 3, 1e-9], "x": None}, "c": 7}, path)
    assert json.loads(path.read_text()) == {"a": {"x": None, "y": [0.666667, 0.0]}, "b": 0.333333, "c": 7}


def test_metrics_json_refuses_nan(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not finite"):
        write_metrics_json({"mean_wait": float("nan")}, tmp_path / "m.json")


def test_binned_integral() -> None:
    # Bins [0,10), [10,20), [20,30). Interval (5, 25) of 2 units: 5 s * 2 = 10 in bin 0, 20 in bin 1,
    # 10 in bin 2. Interval (12, 14) of 3 units: 6 in bin 1. One ending before the edges adds nothing.
    got = binned_integral([(5, 25, 2.0), (12, 14, 3.0), (-10, -5, 9.0)], [0.0, 10.0, 20.0, 30.0])
    assert got == pytest.approx([10.0, 26.0, 10.0])


@pytest.mark.parametrize("which", ["utilization", "tenant_shares", "waits"])
def test_plots_are_png_of_the_expected_size_and_not_blank(tmp_path: Path, which: str) -> None:
    jobs = schedule()
    path = tmp_path / f"{which}.png"
    if which == "utilization":
        plot_utilization(jobs, {"cpu": 4.0}, path)
    elif which == "tenant_shares":
        plot_tenant_shares(jobs, {"t0": 0.5, "t1": 0.25, "t2": 0.25}, path, capacity={"cpu": 4.0})
    else:
        plot_waits(jobs, path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = imread(path)
    height, width = image.shape[:2]
    assert (width, height) == PLOT_SIZE_PX
    assert (image != image[0, 0]).any(), "the image is a single colour"


def test_tenant_shares_sums_tenants_beyond_the_top_ones(tmp_path: Path) -> None:
    # Twelve tenants, one job each: eight are drawn, four summed as one line; the plot still renders.
    jobs = [replace(j, tenant=f"user{i}") for i, j in enumerate(schedule(12))]
    path = tmp_path / "shares.png"
    plot_tenant_shares(jobs, {"user0": 0.5}, path)
    image = imread(path)
    assert (image.shape[1], image.shape[0]) == PLOT_SIZE_PX
    assert (image != image[0, 0]).any()


def test_plots_refuse_schedules_where_nothing_ran(tmp_path: Path) -> None:
    never = [record("1", 0.0, None, None, state="Rejected")]
    with pytest.raises(ValueError, match="no job ran"):
        plot_utilization(never, {"cpu": 4.0}, tmp_path / "u.png")
    with pytest.raises(ValueError, match="no job started"):
        plot_waits(never, tmp_path / "w.png")
