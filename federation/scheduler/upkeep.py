"""The leader keeps the store from growing without bound, and publishes what a failure or a dead replica
left of an accepted submit (``federation.submits``: every ``FINISH_EVERY``).

Finished jobs leave the store once they have been finished for ``store.keepFinished`` (their usage
stays in the accounting history; their records and index entries go). etcd keeps every old version
of every key until its history is compacted, and each job's transitions rewrite its record, so the
leader also compacts etcd's history every ``store.compactEvery`` to the revision it saw one period
before, as the Kubernetes API server does: watchers more than a period behind reload. What that frees
inside etcd's file is given back by defragmenting (``defrag``).
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from federation import keys
from federation.config import StoreUpkeepConfig
from federation.jobs import GuardedWrite, commit_batched, index_ops
from federation.scheduler.defrag import Defragmenter
from federation.scheduler.state import FederationState
from federation.store import Compare, Op, Store
from federation.submits import FINISH_EVERY, Submits
from policies.clock import Clock

log = structlog.get_logger("fedq.upkeep")


class StoreUpkeep:
    def __init__(
        self, store: Store, config: StoreUpkeepConfig, clock: Clock, defragmented: Callable[[], None] | None = None
    ) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self._mark: tuple[float, int] | None = None  # (time, revision) the next compaction goes back to
        self.defrag = Defragmenter(store, config, clock, defragmented)
        self.submits = Submits(store, clock)

    async def run(self, state: FederationState) -> tuple[int, bool]:
        """Whatever is due: cheap when nothing is (a heap peek, a clock read and, every ``FINISH_EVERY``,
        a read of the open submits). Returns how many finished jobs were removed and whether the history
        was compacted."""
        await self.submits.sweep(FINISH_EVERY, patient=True)
        now = self.clock.now()
        due = state.finished_before(now - self.config.keep_finished)
        removed: list[GuardedWrite] = []
        if due:
            removals = [
                GuardedWrite(  # the record and its index entries, if the record is still the one seen
                    Compare.mod_revision(keys.job(job_id), "==", revision),
                    [Op.delete(keys.job(job_id)), *index_ops(job_state, queue, tenant, job_id)],
                )
                for job_id, revision, job_state, queue, tenant in due
            ]
            removed = await commit_batched(self.store, removals)
            log.info("finished jobs past their retention removed", jobs=len(removed))
        compacted = False
        if self._mark is None or now - self._mark[0] >= self.config.compact_every:
            if self._mark is not None:
                await self.store.compact(self._mark[1])
                compacted = True
            self._mark = (now, await self.store.revision())
        self.defrag.start_if_due()
        return len(removed), compacted
