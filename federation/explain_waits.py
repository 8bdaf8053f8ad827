"""What ``fedq explain`` says of a queued job's dependencies: each wait with the states of the jobs it
names (an array's as counts by state) and whether it is met, by the one rule (``federation.dependencies``)."""

from __future__ import annotations

from typing import Any

from federation import keys
from federation.dependencies import Tally, Verdict, verdict
from federation.models import JobRecord
from federation.store import KeyValue, Store


async def waiting_on(store: Store, record: JobRecord) -> list[dict[str, Any]]:
    """One entry per wait: ``job``, ``condition``, ``states`` (state -> jobs; "gone" for a job no
    longer stored), ``elements`` for an array, and ``verdict`` (waiting, met, never satisfied)."""
    out = []
    for wait in record.after:
        targets = wait.targets()
        found = {kv.key: kv for kv in await _records(store, wait.job, bool(wait.count))}
        states: dict[str, int] = {}
        tally = Tally(len(targets))
        for target in targets:
            kv = found.get(keys.job(target))
            state = JobRecord.from_bytes(kv.value).state if kv is not None else None
            if state is None or state.terminal:
                tally.ended(state)
            name = state.value if state is not None else "gone"
            states[name] = states.get(name, 0) + 1
        entry: dict[str, Any] = {"job": wait.job, "condition": wait.condition, "states": states}
        if wait.count:
            entry["elements"] = wait.count
        entry["verdict"] = verdict(wait.condition, tally).value
        out.append(entry)
    return out


def waits_summary(waits: list[dict[str, Any]]) -> str | None:
    """ "waiting on dependencies: afterok on job X (Running)", or "dependency never satisfied: ..." when
    one can never be met; None when every wait is met."""
    never = [w for w in waits if w["verdict"] == Verdict.NEVER.value]
    shown = never or [w for w in waits if w["verdict"] == Verdict.WAIT.value]
    if not shown:
        return None
    parts = []
    for wait in shown:
        states = ", ".join(
            f"{count} {state}" if wait.get("elements") else state for state, count in sorted(wait["states"].items())
        )
        what = f"array {wait['job']}" if wait.get("elements") else f"job {wait['job']}"
        parts.append(f"{wait['condition']} on {what} ({states})")
    return ("dependency never satisfied: " if never else "waiting on dependencies: ") + "; ".join(parts)


async def _records(store: Store, job: str, array: bool) -> list[KeyValue]:
    if array:
        return list(await store.range(keys.job(f"{job}-")))
    kv = await store.get(keys.job(job))
    return [kv] if kv is not None else []
