"""Issue 33, point 6 at its size: 100 agents reporting every second with 100,000 jobs running, against the
same federation with one agent reporting (``tests/abuse/storm.py`` says how; ``tests/abuse/test_report_storm.py``
runs it scaled down in CI). Prints both windows and the ratios; exits non-zero past 2x.

Run: .venv/bin/python bench/storm.py [--agents 100] [--jobs 100000] [--seconds 600] [--profile FILE]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from federation.store import EtcdServer  # noqa: E402
from policies.clock import SystemClock  # noqa: E402
from tests.abuse import storm  # noqa: E402
from tests.conftest import TEST_PREFIXES  # noqa: E402
from tests.e2e.cluster import Federation  # noqa: E402

LIMIT = 2.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=600.0, help="each window: quiet, then the storm")
    parser.add_argument(
        "--profile", metavar="FILE", help="py-spy the API process through the storm window (collapsed stacks)"
    )
    args = parser.parse_args()
    size = storm.Storm(args.agents, args.jobs, args.seconds)
    config = {
        "cluster": {"lostAfter": "120s", "requeueAfter": "600s"},
        "quotas": {"tenants": {"alice": {"jobs": size.jobs + 10_000, "tasks": size.jobs + 10_000}}},
    }
    spies: list[subprocess.Popen[bytes]] = []

    def spy(pid: int) -> None:
        py_spy = Path(sys.executable).parent / "py-spy"
        duration = str(max(1, int(args.seconds) - 2))
        command = [str(py_spy), "record", "--pid", str(pid), "--duration", duration, "--format", "raw"]
        spies.append(subprocess.Popen([*command, "--output", args.profile], stdout=subprocess.DEVNULL))

    with (
        tempfile.TemporaryDirectory(prefix="fedq-storm-") as work,
        EtcdServer(prefixes=TEST_PREFIXES, clock=SystemClock()) as etcd,
    ):
        fed = Federation(etcd.connection, Path(work), config)
        try:
            quiet, loud = storm.run(fed, size, on_storm=spy if args.profile else None)
        finally:
            fed.close()
            for process in spies:
                process.wait(timeout=60)
    ratios = storm.ratios(quiet, loud)
    print(f"{size}\nquiet: {quiet.row()}\nstorm: {loud.row()}")
    print("storm / quiet: " + ", ".join(f"{name} {ratio:.2f}x" for name, ratio in ratios.items()))
    return 0 if all(ratio <= LIMIT for ratio in ratios.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
