"""``fedq`` starts without the heavy stacks that only some commands need.

Every command parses the whole parser, so whatever the command modules import at the top is paid by
``fedq jobs`` too: matplotlib (plots), the web server, the Kubernetes client and the etcd client
took ~1.2 s of a 1.8 s start-up before they were imported where they are used; the HTTP client,
rich, pydantic and structlog are loaded when a command needs them, not by ``--help``
(``bench/cli.py`` times the whole process).
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("matplotlib", "uvicorn", "fastapi", "kubernetes", "ray", "federation.launcher", "federation.simulator.engine")
CLIENT = ("httpx", "rich", "pydantic", "structlog", "yaml", "asyncio", "federation.lifecycle")


def loaded(code: str, names: tuple[str, ...]) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {names!r} if sys.modules.get(m) is not None))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return [name for name in done.stdout.strip().split(",") if name]


def test_building_the_parser_imports_no_heavy_stack() -> None:
    code = "from federation.cli import build_parser\nbuild_parser().parse_args(['jobs'])"
    assert loaded(code, HEAVY + CLIENT) == []


def test_listing_loads_the_standard_library_client_not_httpx_rich_or_models() -> None:
    """``fedq jobs`` against no server: the standard library's client is loaded; httpx (~60 ms), rich
    (~40 ms: the error line is written without it too), pydantic and structlog are not."""
    code = (
        "from federation.cli import main\n"
        "main(['jobs', '--server', 'http://127.0.0.1:9'])  # refused: exit 3, after the client loaded"
    )
    names = ("federation.quick_client", "httpx", "rich", "pydantic", "structlog", "federation.lifecycle")
    assert loaded(code, names) == ["federation.quick_client"]
