"""A submit is checked against the queue tree its replica holds without reading it again, and written
only if that tree is still the stored one (a guard in the txn that writes the jobs): another replica's
``fedq queues apply`` between the check and the write is never missed, and a refusal is checked again
against the tree read afresh."""

from __future__ import annotations

import copy
from typing import Any

from federation import keys
from federation.store import KeyValue, MemoryStore
from policies.clock import ManualClock
from tests.api.conftest import QUEUES, START, serving
from tests.api.support import ADMIN, bearer, job_spec


class CountingStore(MemoryStore):
    """Counts the reads of the queue tree's key."""

    def __init__(self) -> None:
        super().__init__(clock=ManualClock(START))
        self.tree_reads = 0

    async def get(self, key: str) -> KeyValue | None:
        self.tree_reads += key == keys.QUEUES
        return await super().get(key)


def without_alice() -> dict[str, Any]:
    tree = copy.deepcopy(QUEUES)
    tree["queues"][0]["children"][0]["tenants"] = ["bob"]
    return tree


async def test_a_submit_reads_the_tree_only_when_another_replica_changed_it() -> None:
    store = CountingStore()
    async with serving(store, ManualClock(START)) as api, serving(store, ManualClock(START)) as other:
        spec = job_spec("guarded", queue="research.vision")
        assert (await api.http.post("/v1/jobs", json=spec, headers=api.auth("alice"))).status_code == 201
        before = store.tree_reads
        for _ in range(5):
            assert (await api.http.post("/v1/jobs", json=spec, headers=api.auth("alice"))).status_code == 201
        assert store.tree_reads == before, "a submit read the unchanged tree"

        applied = await other.http.put("/v1/queues", json=without_alice(), headers=bearer(ADMIN))
        assert applied.status_code == 200, applied.text
        jobs_before = len(await store.range(keys.JOBS))
        refused = await api.http.post("/v1/jobs", json=spec, headers=api.auth("alice"))
        assert refused.status_code == 403, refused.text  # the guard failed; checked again against the new tree
        assert "may not submit to queue 'research.vision'" in refused.json()["error"]
        assert len(await store.range(keys.JOBS)) == jobs_before, "the refused submit wrote"
        # Bob, whom the new tree allows, is accepted at once.
        assert (await api.http.post("/v1/jobs", json=spec, headers=api.auth("bob"))).status_code == 201
    await store.close()
