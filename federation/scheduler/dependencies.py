"""The dependency index: waiting jobs by the jobs they wait on, moved by those jobs' ends.

``FederationState`` asks ``waits`` when a queued job's record arrives and blocks the job (out of the
pending index: no cycle, no demand) while it waits; each job's end, as the watch brings it, costs
only the waits on that job (``ended``), which returns the jobs it frees. A wait that can never be met
moves its job to ``unmet``, for the leader to act on (``take_unmet``: cancel it or say why it waits,
as ``jobs.killInvalidDepend`` says); such a job stays blocked. Nothing here rescans the queue.
The rule of when a wait is met is ``federation.dependencies``'; this module only counts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from federation.dependencies import Tally, Verdict, never_reason, verdict
from federation.lifecycle.states import JobState
from federation.models import JobRecord
from federation.models.dependency import Wait


@dataclass(slots=True, eq=False)
class _Need:
    """One of a job's waits not met yet, with its targets counted."""

    wait: Wait
    tally: Tally


class DependencyIndex:
    def __init__(self, finished: Mapping[str, tuple[float, int, str, str, str]]) -> None:
        self._finished = finished  # the state's ended jobs still stored: id -> (ended, revision, state, queue)
        self._needs: dict[str, list[_Need]] = {}  # waiting job -> its waits not met yet
        self._waiters: dict[str, list[tuple[str, _Need]]] = {}  # target -> (waiting job, its wait)
        self._met: set[str] = set()  # queued jobs whose every wait was met: never asked again
        self.unmet: dict[str, str] = {}  # job -> why it can never run (stays blocked)
        self._to_act: dict[str, str] = {}  # unmet jobs the leader has not acted on since they arrived

    def __len__(self) -> int:
        return len(self._needs) + len(self.unmet)

    def waits(self, record: JobRecord) -> bool:
        """Whether the queued job waits (or can never run); registers its waits the first time."""
        job_id = record.id
        if not record.after or job_id in self._met:
            return False
        if job_id in self.unmet:
            self._to_act[job_id] = self.unmet[job_id]  # a new version of it: act again if need be
            return True
        if job_id in self._needs:
            return True
        needs = []
        for wait in record.after:
            targets = wait.targets()
            need = _Need(wait, Tally(len(targets)))
            open_targets = []
            for target in targets:
                known = self._finished.get(target)
                state = JobState(known[2]) if known is not None else None
                if state is None:
                    open_targets.append(target)
                else:
                    need.tally.ended(state)
                    if verdict(wait.condition, need.tally) is Verdict.NEVER:
                        self._doom(job_id, never_reason(wait, target, state))
                        return True
            if verdict(wait.condition, need.tally) is Verdict.WAIT:
                needs.append(need)
                for target in open_targets:
                    self._waiters.setdefault(target, []).append((job_id, need))
            elif verdict(wait.condition, need.tally) is Verdict.NEVER:  # afternotok: every target succeeded
                self._doom(job_id, never_reason(wait, targets[-1], JobState.SUCCEEDED))
                return True
        if needs:
            self._needs[job_id] = needs
            return True
        self._met.add(job_id)
        return False

    def ended(self, target: str, state: JobState | None) -> list[str]:
        """``target`` ended as ``state`` (None: it is gone): the jobs that frees (every wait met now)."""
        freed = []
        for job_id, need in self._waiters.pop(target, ()):
            needs = self._needs.get(job_id)
            if needs is None or need not in needs:
                continue  # the job left, or its waits were settled otherwise
            need.tally.ended(state)
            found = verdict(need.wait.condition, need.tally)
            if found is Verdict.NEVER:
                del self._needs[job_id]
                self._doom(job_id, never_reason(need.wait, target, state))
            elif found is Verdict.MET:
                needs.remove(need)
                if not needs:
                    del self._needs[job_id]
                    self._met.add(job_id)
                    freed.append(job_id)
        return freed

    def settle(self, known: Callable[[str], bool]) -> list[str]:
        """After a load: targets the store no longer holds are gone, and count as met (Slurm's rule
        for a purged job); returns the jobs that frees."""
        freed = []
        for target in [t for t in self._waiters if not known(t)]:
            freed += self.ended(target, None)
        return freed

    def forget(self, job_id: str) -> None:
        """The job left the queue for good (its waits go; waits on it stay until it ends)."""
        self._needs.pop(job_id, None)
        self._met.discard(job_id)
        self.unmet.pop(job_id, None)
        self._to_act.pop(job_id, None)

    def blocked(self) -> Iterator[tuple[str, bool]]:
        """(job, whether it can never run) for each job kept waiting: those that never can first."""
        yield from ((job_id, True) for job_id in self.unmet)
        yield from ((job_id, False) for job_id in self._needs)

    def waiting_on(self, job_id: str) -> list[Wait]:
        """The job's waits not met yet (empty when it does not wait)."""
        return [need.wait for need in self._needs.get(job_id, ())]

    def take_unmet(self) -> list[tuple[str, str]]:
        """The unmet jobs to act on (job, why), each once per version of its record."""
        taken = sorted(self._to_act.items())
        self._to_act.clear()
        return taken

    def _doom(self, job_id: str, why: str) -> None:
        self.unmet[job_id] = why
        self._to_act[job_id] = why
