"""``fedq`` starts without the heavy stacks that only some commands need.

Every command parses the whole parser, so whatever the command modules import at the top is paid by
``fedq jobs`` too: matplotlib (plots), the web server, the Kubernetes client and the etcd client
took ~1.2 s of a 1.8 s start-up before they were imported where they are used.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("matplotlib", "uvicorn", "fastapi", "kubernetes", "ray", "federation.launcher")


def test_building_the_parser_imports_no_heavy_stack() -> None:
    probe = (
        "import sys\n"
        "from federation.cli import build_parser\n"
        "build_parser().parse_args(['jobs'])\n"
        f"print(','.join(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""
