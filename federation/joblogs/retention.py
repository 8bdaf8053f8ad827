"""A job's logs live as long as its record: the leader deletes a finished job's record
``store.keepFinished`` after it ends, and each replica's sweep then removes the job's log directory
(chunks are written only for jobs whose record exists, so no other directory can appear)."""

from __future__ import annotations

import asyncio

import structlog

from federation import keys
from federation.joblogs.store import LogStore
from federation.store import Store, StoreError, get_many

log = structlog.get_logger("fedq.logs")

SWEEP_EVERY = 300.0


async def sweep(store: Store, logs: LogStore) -> int:
    """Remove the logs of jobs that no longer exist; answers how many."""
    held = await asyncio.to_thread(logs.jobs)
    found = await get_many(store, [keys.job(job_id) for job_id in held])
    gone = [job_id for job_id, kv in zip(held, found, strict=True) if kv is None]
    await asyncio.to_thread(logs.remove, gone)
    return len(gone)


async def sweep_forever(store: Store, logs: LogStore, every: float = SWEEP_EVERY) -> None:
    while True:
        try:
            removed = await sweep(store, logs)
        except (StoreError, OSError) as exc:
            log.warning("log sweep failed; retrying", error=str(exc))
        else:
            if removed:
                log.info("logs of removed jobs deleted", jobs=removed)
        await asyncio.sleep(every)
