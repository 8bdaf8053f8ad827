"""The dependency rule, in one place: when a ``Wait`` is met, still open, or can never be met.

Slurm's semantics, over the targets' ends (a target that is gone from the store, removed after
``store.keepFinished``, counts as met, as Slurm clears a dependency on a purged job):

- ``afterok``: every target Succeeded; never once one ended Failed or Cancelled.
- ``afternotok``: every target ended and at least one Failed or was Cancelled; never when they all
  Succeeded (for one job: it failed).
- ``afterany``: every target ended, however.

The scheduler's index (``federation.scheduler.dependencies``) keeps the counts per wait as targets
end and asks ``verdict``; explain asks it too. Also here: the submit-time rules that need no store,
resolving ``name`` references within one request and refusing cycles among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from federation.lifecycle.states import JobState
from federation.models.dependency import Dependency, Wait, WaitCondition
from federation.models.job import JobManifest


class Verdict(Enum):
    WAIT = "waiting"
    MET = "met"
    NEVER = "never satisfied"


@dataclass(slots=True, eq=False)
class Tally:
    """A wait's targets by how far they are: not ended yet, Succeeded, ended otherwise."""

    open: int
    ok: int = 0
    notok: int = 0

    def ended(self, state: JobState | None) -> None:
        """A target ended as ``state``; None: it is gone from the store (neither ok nor not)."""
        self.open -= 1
        if state is JobState.SUCCEEDED:
            self.ok += 1
        elif state is not None:
            self.notok += 1


def verdict(condition: WaitCondition, tally: Tally) -> Verdict:
    if condition == "afterok":
        return Verdict.NEVER if tally.notok else Verdict.MET if not tally.open else Verdict.WAIT
    if tally.open:
        return Verdict.WAIT
    if condition == "afternotok":
        return Verdict.MET if tally.notok or not tally.ok else Verdict.NEVER
    return Verdict.MET


def never_reason(wait: Wait, target: str, state: JobState | None) -> str:
    return f"dependency never satisfied: {wait.describe()}, and {target} is {state.value if state else 'gone'}"


class DependencyError(ValueError):
    """A ``dependsOn`` entry that cannot be accepted; ``field`` is its place in the request."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class Target:
    """A stored job or array a dependency may name (the caller's own): ``count`` 0 for one job."""

    id: str
    count: int = 0


def by_name(manifests: Sequence[JobManifest], prefixes: Sequence[str]) -> dict[str, int]:
    """The request's jobs that ``name`` references may point to: each name used once in the request
    (a referenced name used twice is refused where it is referenced)."""
    seen: dict[str, int] = {}
    twice: set[str] = set()
    for number, manifest in enumerate(manifests):
        name = manifest.metadata.name
        if name in seen:
            twice.add(name)
        seen.setdefault(name, number)
    for number, manifest in enumerate(manifests):
        for position, dependency in enumerate(manifest.spec.depends_on):
            if dependency.name is not None and dependency.name in twice:
                field = f"{prefixes[number]}spec.dependsOn[{position}].name"
                raise DependencyError(field, f"{dependency.name!r} names more than one job of this request")
            if dependency.name is not None and dependency.name not in seen:
                field = f"{prefixes[number]}spec.dependsOn[{position}].name"
                raise DependencyError(
                    field, f"no job named {dependency.name!r} in this request (a stored job is named by its id: job)"
                )
    return seen


def find_cycle(edges: Sequence[Sequence[int]]) -> list[int] | None:
    """A ring in the graph ``edges`` (node -> the nodes it waits on), as its nodes with the first
    repeated at the end, or None. Iterative depth-first search: a long chain does not recurse."""
    done: set[int] = set()
    for start in range(len(edges)):
        path: list[int] = []
        on_path: set[int] = set()
        stack: list[tuple[int, int]] = [(start, 0)]  # (node, next edge to follow)
        while stack:
            node, edge = stack.pop()
            if edge == 0:
                if node in done:
                    continue
                if node in on_path:
                    return [*path[path.index(node) :], node]
                path.append(node)
                on_path.add(node)
            if edge < len(edges[node]):
                stack.append((node, edge + 1))
                stack.append((edges[node][edge], 0))
            else:
                path.pop()
                on_path.discard(node)
                done.add(node)
    return None


def refuse_cycles(manifests: Sequence[JobManifest], names: dict[str, int], prefixes: Sequence[str]) -> None:
    """A request whose jobs wait on each other in a ring (or one on itself) is refused, naming the ring.

    Only ``name`` references can close one: a stored job's dependencies were fixed when it was
    submitted, before the new jobs had ids, so no path through a stored job leads back here."""
    ring = find_cycle([[names[d.name] for d in m.spec.depends_on if d.name is not None] for m in manifests])
    if ring is not None:
        shown = " -> ".join(manifests[n].metadata.name for n in ring)
        field = f"{prefixes[ring[-2]]}spec.dependsOn"
        raise DependencyError(field, f"dependency cycle: {shown}; a job cannot wait on itself")


def waits_of(
    dependencies: Sequence[Dependency],
    array_index: int | None,
    resolve: dict[str, Target],
    request_ids: Sequence[Target],
    names: dict[str, int],
) -> list[Wait]:
    """One record's waits: ``resolve`` maps each stored ``job``/``array`` a spec names to its target,
    ``request_ids`` holds the request's own jobs by number (their new ids), ``names`` their numbers."""
    out = []
    for dependency in dependencies:
        if dependency.name is not None:
            target = request_ids[names[dependency.name]]
        else:
            target = resolve[dependency.job if dependency.job is not None else str(dependency.array)]
        if dependency.condition == "aftercorr":
            assert array_index is not None and target.count  # checked at submit (``check_corr``)
            out.append(Wait(job=f"{target.id}-{array_index}", condition="afterok"))
        else:
            out.append(Wait(job=target.id, condition=dependency.condition, count=target.count))
    return out


def check_corr(dependency: Dependency, own_count: int | None, target: Target, field: str) -> None:
    """``aftercorr``: element i waits for element i of another array, so both must be arrays and the
    other at least as long."""
    if dependency.condition != "aftercorr":
        return
    if own_count is None:
        raise DependencyError(field, "aftercorr is for an array's elements: this job is not an array (use afterok)")
    if not target.count:
        raise DependencyError(field, f"aftercorr needs an array to correspond to; {target.id} is one job")
    if target.count < own_count:
        raise DependencyError(
            field, f"aftercorr: array {target.id} has {target.count} elements, fewer than this array's {own_count}"
        )
