"""Profiles a benchmark can take of a figure it misses, to explain the miss (issue 35's rule): a
sampling profile of another process tree (py-spy, from the venv) and a cProfile of a stretch of the
benchmark's own process, each written to a directory and summarised in a few lines."""

from __future__ import annotations

import cProfile
import pstats
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

PY_SPY = Path(sys.executable).parent / "py-spy"
RATE = 100  # samples a second


class Sampled:
    """py-spy over a process tree from the moment ``pid()`` returns a pid until ``stop``."""

    def __init__(self, pid: Callable[[], int | None], out: Path) -> None:
        self._pid = pid
        self.out = out
        self._spy: subprocess.Popen[bytes] | None = None
        self._thread = threading.Thread(target=self._attach, daemon=True)
        self._stopped = threading.Event()
        self._thread.start()

    def _attach(self) -> None:
        while (pid := self._pid()) is None:
            if self._stopped.wait(0.002):
                return
        command = [str(PY_SPY), "record", "--subprocesses", "--nonblocking", "--format", "raw"]
        command += ["--rate", str(RATE), "--pid", str(pid), "--output", str(self.out)]
        self._spy = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        """Stop sampling; py-spy writes its file on SIGINT."""
        self._stopped.set()
        self._thread.join()
        if self._spy is not None:
            self._spy.send_signal(signal.SIGINT)
            self._spy.wait(timeout=120)

    def summary(self, top: int = 25) -> str:
        """Seconds spent in each function (inclusive), per process, the largest first."""
        if not self.out.exists():
            return f"(no samples: {self.out} was not written)"
        inclusive: Counter[tuple[str, str]] = Counter()
        for line in self.out.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            frames = stack.split(";")
            process = next((f.split('"')[1].split(" -")[0][-60:] for f in frames if f.startswith("process ")), "?")
            seen = set()
            for frame in frames:
                if frame.startswith("process "):
                    continue
                name = frame.split(" (")[0]
                where = frame[frame.find("(") + 1 : frame.rfind(":")] if "(" in frame else ""
                key = (process, f"{name} ({Path(where).name})")
                if key not in seen:
                    seen.add(key)
                    inclusive[key] += int(count)
        lines = [f"    {n / RATE:7.2f} s  {fn}   [{proc}]" for (proc, fn), n in inclusive.most_common(top)]
        return "\n".join(lines)


@contextmanager
def profiled(out: Path, top: int = 25) -> Iterator[None]:
    """cProfile the block; write ``out`` (pstats) and print the functions with the most time inside."""
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(out)
        print(f"  profile of {time.perf_counter() - started:.1f} s written to {out}; by time inside:")
        stats = pstats.Stats(profile, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(top)
