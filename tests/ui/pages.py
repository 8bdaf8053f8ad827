"""What the dashboard's tests hold on to: the federation they look at, and a page that records
what went wrong on it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.cluster import Federation

SCREENSHOTS = Path(os.environ.get("FEDQ_UI_SCREENSHOTS", Path(__file__).parent / "screenshots"))


@dataclass
class Dashboard:
    """The federation the pages look at: its URL, tokens by who, and the workload's job ids by tenant."""

    fed: Federation
    tokens: dict[str, str]
    workload: dict[str, list[str]] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.fed.server.url


class Watched:
    """A page and what went wrong on it: console errors and warnings, page errors, failed requests and
    answers of 400 or more. A request aborted on the client's side (``net::ERR_ABORTED``: the page
    left a view and ended its streams, or the test navigated away) is not a failure; a server that
    fails or drops a connection shows as a status or another net error."""

    def __init__(self, page: Any) -> None:
        self.page = page
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.answers: list[tuple[str, Any]] = []
        """The API's JSON answers to the page, read as they arrive (a later navigation drops their bodies)."""
        page.on(
            "console",
            lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None,
        )
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("request", lambda r: self.requests.append(r.url))
        page.on("requestfailed", self._failed)
        page.on("response", self._answered)

    def _answered(self, response: Any) -> None:
        if response.status >= 400:
            self.problems.append(f"{response.status} {response.url}")
        elif "/v1/" in response.url and response.headers.get("content-type", "").startswith("application/json"):
            self.answers.append((response.url, response.json()))

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.problems.append(f"console {message.type}: {message.text}")

    def _failed(self, request: Any) -> None:
        if request.failure == "net::ERR_ABORTED":
            return
        self.problems.append(f"failed {request.url}: {request.failure}")

    def login(self, url: str, token: str) -> None:
        self.page.goto(f"{url}/")
        self.page.wait_for_selector("#login:not([hidden]), #logout:not([hidden])")
        if self.page.is_visible("#logout"):  # whoever was logged in in this tab logs out first
            self.page.click("#logout")
        self.page.fill("#token", token)
        self.page.press("#token", "Enter")
        self.page.wait_for_selector("#who:not([hidden])")

    def screenshot(self, name: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path
