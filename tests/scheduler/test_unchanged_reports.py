"""Reports that change nothing but the time (issue 33, point 6): a hundred agents each holding a thousand
runs report every second, so an agent whose nodes, runs and honoured fields are as in the report the
federation holds names that report (``unchanged_since``) instead of sending it again, and the federation
keeps such a cluster alive from when it was heard."""

from __future__ import annotations

from federation import keys
from federation.models import JobState
from federation.models.cluster import LatestReport, NodeReport
from federation.scheduler.state import FederationState
from tests.scheduler.conftest import HarnessFactory


async def test_an_agent_names_the_stored_report_until_something_changes(make_harness: HarnessFactory) -> None:
    h = await make_harness({}, {"queues": [{"name": "a"}]})
    agent = await h.join("c1", [{"count": 1, "resources": {"cpu": 4}}])
    await h.tick(1)
    stored = await h.store.get(keys.report("c1"))
    assert stored is not None
    quiet = agent.build_report()
    assert (quiet.unchanged_since, quiet.nodes, quiet.running) == (stored.mod_revision, [], [])
    job = await h.submit("t", cpu=1, runtime=1000)
    for _ in range(3):
        await h.tick(1)
    assert (await h.job(job)).state is JobState.RUNNING
    after = await h.store.get(keys.report("c1"))
    assert after is not None and after.mod_revision > stored.mod_revision  # the run was sent whole
    assert [ref[0] for ref in LatestReport.from_bytes(after.value).running] == [job]
    h.clock.advance(60)  # four times lostAfter: only the unchanged reports keep it alive
    await h.tick(0)
    assert agent.build_report().unchanged_since == after.mod_revision
    await h.service.sync()
    assert h.service.state is not None
    assert h.service.state.clusters["c1"].report_time == h.clock.now()


def test_when_a_cluster_was_last_heard_never_goes_back() -> None:
    """The scheduler's cold load applies keys in order: ``heard/`` sorts before ``reports/``."""
    state = FederationState()
    state.set_cluster("c1", {}, False)
    state.set_heard("c1", 100.0)
    node = NodeReport(name="n", allocatable={"cpu": 1.0}, free={"cpu": 1.0})
    state.set_latest("c1", LatestReport(time=50.0, nodes=[node], running=[]))
    assert state.clusters["c1"].report_time == 100.0
    state.set_heard("c1", 90.0)
    assert state.clusters["c1"].report_time == 100.0
