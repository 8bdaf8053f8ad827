"""Conformance cases on the production scheduler (real etcd, manual clock): the same scenarios and
the same hand-worked checks as through ``fedq simulate``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.conformance.cases import DAY, Rows
from tests.conformance.production import replay
from tests.conformance.test_guarantees import check_guarantee, guarantee_case
from tests.conformance.test_htcondor import check_newcomer, newcomer_case
from tests.conformance.test_tree import check_tree, tree_case
from tests.scheduler.conftest import HarnessFactory

pytestmark = pytest.mark.etcd


@pytest.mark.parametrize(
    ("case", "check", "until"),
    [
        pytest.param(newcomer_case, check_newcomer, 2 * DAY, id="newcomer-queue"),
        pytest.param(tree_case, check_tree, 0, id="three-levels"),
        pytest.param(guarantee_case, check_guarantee, 1000, id="guarantee-and-cap"),
    ],
)
async def test_case_on_the_production_scheduler(
    make_harness: HarnessFactory,
    case: Callable[[], dict[str, Any]],
    check: Callable[[Rows], None],
    until: float,
) -> None:
    check(await replay(make_harness, case(), until))
