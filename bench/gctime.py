"""What the cyclic garbage collector took during a timed window: its passes and their wall time per
generation, from ``gc.callbacks``. A benchmark prints it beside its figure, so a change in the
collector's share is seen rather than guessed (federation/collector.py)."""

from __future__ import annotations

import gc
import time
from types import TracebackType
from typing import Any


class CollectorTime:
    """``with CollectorTime() as gc_time: ...`` then ``str(gc_time)``."""

    def __init__(self) -> None:
        self.passes = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info["generation"]
        self.passes[generation] += 1
        self.seconds[generation] += time.perf_counter() - self._started

    def __enter__(self) -> CollectorTime:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        gc.callbacks.remove(self._callback)

    def __str__(self) -> str:
        young = sum(self.passes[:2])
        return (
            f"the collector: {young:,} young passes {sum(self.seconds[:2]):.2f} s, "
            f"{self.passes[2]} full passes {self.seconds[2]:.2f} s"
        )
