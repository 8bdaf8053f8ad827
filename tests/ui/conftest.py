"""The dashboard in a real Chromium (Playwright, the system's ``chromium`` package) against ``fedq server``
on the session's etcd with two simulated agents running a workload. One browser and one federation for
the whole session; each test gets its own browser context (fresh session storage), and fails if its page
logged a console error or a request failed."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job
from tests.e2e.support import ADMIN_TOKEN
from tests.ui.pages import Dashboard, Watched

CHROMIUM = os.environ.get("FEDQ_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
HALF_LIFE = "5m"
LONG = "10m"  # the workload's runs outlast the session: allocations hold still while tests compare them

pytestmark = [pytest.mark.etcd, pytest.mark.slow]


@pytest.fixture(scope="module")
def dashboard(etcd_server: EtcdServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    # A half-life of minutes: the workload's usage moves the real priorities, so the fair shares, within
    # the session, and the Usage view's fair-share series has something to show (issue 36).
    config = {**FAST, "accountingSaveEvery": "200ms", "fairshare": {"halfLife": HALF_LIFE}}
    fed = Federation(etcd_server.connection, tmp_path_factory.mktemp("ui"), config)
    try:
        fed.join("east", "simulated", "--labels", "region=eu")
        fed.join("west", "simulated", "--labels", "region=us")
        tokens = {"admin": ADMIN_TOKEN}
        for tenant in ("alice", "bob", "carol"):
            tokens[tenant] = fed.admin.create_tenant_token(tenant)
        board = Dashboard(fed, tokens)
        board.workload["alice"] = [fed.submit(job(f"alice-{i}", cpu="1", runtime=LONG), "alice") for i in range(2)]
        board.workload["bob"] = [fed.submit(job("bob-0", cpu="2", runtime=LONG), "bob")]
        spec = job("carol-0", cpu="1", runtime=LONG)
        spec["spec"]["queue"] = "research.nlp"
        board.workload["carol"] = [fed.submit(spec, "carol")]
        for ids in board.workload.values():
            for job_id in ids:
                fed.wait_state(job_id, {"Running"})
        yield board
    finally:
        fed.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Module-scoped, not session: Playwright's sync API leaves its event loop as the main thread's
    running loop until it stops, and every asyncio test after tests/ui then failed ("cannot be called
    from a running event loop")."""
    if CHROMIUM is None:
        pytest.fail("no chromium: `apt-get install -y chromium` (.ci/run installs it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    context = browser.new_context(
        viewport={"width": 1280, "height": 800}, ignore_https_errors=True, accept_downloads=True
    )
    page = Watched(context.new_page())
    yield page
    context.close()
    assert page.problems == [], "the page logged errors or requests failed"
