"""Issue 33, point 6: many agents reporting every second while many jobs run must not slow the
federation. A report that changes nothing but the time names the report the federation holds
(``unchanged_since``), so its cost does not grow with the runs a cluster holds and it wakes no
scheduler cycle: asserted here, with every report answered. The latencies (each agent's report, the
scheduler's cycle, a tenant's submit and first page, storm against quiet: the issue's 2x) are printed;
they are timings, so they are asserted by ``bench/storm.py`` (at the issue's size, 100 agents, 100,000
jobs and ten minutes; bench/README.md), not in a suite that runs beside other tests (DEVELOPERS.md).

Scaled for CI; ``FEDQ_STORM`` = agents,jobs,seconds overrides it (``tests/abuse/storm.py`` says how it
is measured)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from federation.store import EtcdServer
from tests.abuse import storm
from tests.e2e.cluster import Federation

pytestmark = [pytest.mark.etcd, pytest.mark.slow]

_AGENTS, _JOBS, _SECONDS = os.environ.get("FEDQ_STORM", "100,10000,20").split(",")
SIZE = storm.Storm(int(_AGENTS), int(_JOBS), float(_SECONDS))
LIMIT = 2.0  # the bound: within 2x of a quiet federation


def test_a_report_storm_keeps_reports_cycles_and_the_api_within_twice_quiet(
    etcd_server: EtcdServer, tmp_path: Path
) -> None:
    config = {
        "cluster": {"lostAfter": "120s", "requeueAfter": "600s"},  # the quiet window's silent agents stay Ready
        "quotas": {"tenants": {"alice": {"jobs": SIZE.jobs + 10_000}}},
    }
    fed = Federation(etcd_server.connection, tmp_path, config)
    try:
        quiet, loud = storm.run(fed, SIZE)
    finally:
        fed.close()
    ratios = storm.ratios(quiet, loud)
    figures = f"{SIZE}\nquiet: {quiet.row()}\nstorm: {loud.row()}\nstorm / quiet: " + ", ".join(
        f"{name} {ratio:.2f}x" for name, ratio in ratios.items()
    )
    print(figures)
    assert loud.report_errors == 0, figures
    # A hundred reports a second wake no cycles: the scheduler cycles as often as when one agent reports
    # (before: 2.6-2.8x as often, each report waking one).
    assert loud.cycles / loud.seconds <= LIMIT * quiet.cycles / quiet.seconds, figures
