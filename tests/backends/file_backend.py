"""A backend whose runs live in a JSON file, so they outlive its process as a cluster's runs outlive a
backend's client; ``crash`` ends the process as Ray's driver ends itself when its head restarts."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from member_agent.backends.base import LaunchError, LogLines, NodeView, TaskLaunch, TaskPhase, TaskReport
from policies.clock import Clock


class FileBackend:
    name = "file"

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def from_config(cls, settings: Mapping[str, Any], clock: Clock) -> FileBackend:
        return cls(Path(settings["path"]))

    def _runs(self) -> list[dict[str, Any]]:
        return json.loads(self.path.read_text()) if self.path.exists() else []

    def nodes(self) -> list[NodeView]:
        return [NodeView("n1", {"cpu": 4.0}, {"cpu": float(len(self._runs()))})]

    def launch(self, gang: Sequence[TaskLaunch]) -> None:
        if any(launch.job_id == "refused" for launch in gang):
            raise LaunchError("refused by the file backend")
        runs = self._runs() + [[g.job_id, g.task_name, g.index, g.epoch] for g in gang]
        self.path.write_text(json.dumps(runs))

    def kill(self, job_id: str, epoch: int | None = None, reason: str = "cancelled") -> None:
        if job_id == "crash":
            os._exit(1)

    def poll(self) -> list[TaskReport]:
        return []

    def logs(self) -> list[LogLines]:
        return []

    def tasks(self) -> list[TaskReport]:
        return [
            TaskReport(job, task, index, epoch, TaskPhase.RUNNING, node="n1")
            for job, task, index, epoch in self._runs()
        ]

    def close(self) -> None:
        pass
