"""The replay's per-job starts on a real trace are pinned (issue 34, acceptance 3).

The first 2,000 usable jobs of KTH-SP2 replayed with EASY on one cluster, once as one tenant (plain
first-come order, the model of ``bench/peer_accasim.md``) and once with a tenant per SWF user (fair share
between users). Every job's start time and final state must equal the fixture's. The fixture holds the
output of the base code at commit d690d52, before issue 34 made the replay cheaper: a faster replay must
not change a single start. The numbers are not a judgement of correctness; that is the job of
``tests/conformance/`` (whose reference for EASY is AccaSim's rule), which must hold as well.

Regenerate only when a change is meant to move starts (and say why in its commit):
``.venv/bin/python -m tests.simulator.test_kth_starts --regen``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from federation.config import FederationConfig
from federation.logs import configure_logging
from federation.simulator.engine import simulate
from federation.simulator.run import with_policy
from federation.simulator.swf import read_swf
from federation.simulator.trace import TenantBy, scenario_from_swf

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
KTH = TRACES / "KTH-SP2-1996-2.1-cln.swf.gz"
FIXTURE = Path(__file__).resolve().parent / "data" / "kth2000_starts.json.gz"
JOBS = 2000
TENANTS: tuple[TenantBy, ...] = ("one", "user")


def replay(tenant_by: TenantBy) -> dict[str, list[Any]]:
    """Each job's start (seconds from the scenario start, None if it never ran) and state, in file order."""
    scenario = scenario_from_swf(
        read_swf(KTH, limit=JOBS), with_policy(FederationConfig(), "easy"), clusters=1, tenant_by=tenant_by
    )
    records = simulate(scenario).records
    return {"ids": [r.id for r in records], "starts": [r.start for r in records], "states": [r.state for r in records]}


@pytest.mark.slow
@pytest.mark.skipif(not KTH.exists(), reason=f"the KTH-SP2 trace is not at {KTH} (shared/traces not present)")
@pytest.mark.parametrize("tenant_by", TENANTS)
def test_kth_prefix_starts_are_the_base_codes(tenant_by: TenantBy) -> None:
    expected = json.loads(gzip.decompress(FIXTURE.read_bytes()))[tenant_by]
    got = replay(tenant_by)
    assert got["ids"] == expected["ids"]
    moved = [
        (job, old, new, old_state, new_state)
        for job, old, new, old_state, new_state in zip(
            got["ids"], expected["starts"], got["starts"], expected["states"], got["states"], strict=True
        )
        if old != new or old_state != new_state
    ]
    started = sum(start is not None for start in got["starts"])
    print(f"{tenant_by}: {len(got['ids'])} jobs, {started} started, {len(moved)} differ from the base code")
    assert not moved, f"{len(moved)} of {JOBS} moved (job, old start, new start, old state, new state): {moved[:10]}"


if __name__ == "__main__" and sys.argv[1:] == ["--regen"]:
    configure_logging("warning")
    FIXTURE.parent.mkdir(exist_ok=True)
    data = json.dumps({tenant_by: replay(tenant_by) for tenant_by in TENANTS}, separators=(",", ":"))
    FIXTURE.write_bytes(gzip.compress(data.encode(), mtime=0))
    print(f"wrote {FIXTURE} ({FIXTURE.stat().st_size} bytes)")
