"""The acceptance scenarios against the stub API server (the same ones test_real_cluster.py runs)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.k8s.conftest import StubCluster
from tests.k8s.scenarios import SCENARIOS, Cluster


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_scenario_on_stub(scenario: Callable[[Cluster], None], cluster: StubCluster) -> None:
    scenario(cluster)
