"""One real local Ray for the whole test session, shared by every Ray test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[None]:
    """``ray.init`` once (2 CPUs, no dashboard); imported lazily so non-Ray tests never pay for Ray."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
