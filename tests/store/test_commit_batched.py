"""The CAS changes every writer of jobs commits (``federation.jobs.commit_batched``: the scheduler, the
report handler, upkeep, job actions) go in txns bounded by bytes as well as ops, on both backends: large
records make few changes a txn, and one change too large for any txn is left out, not raised, so it
cannot stop the others (issue 33, point 1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from federation.jobs import commit_batched
from federation.store import Compare, Op, Store
from federation.store.base import MAX_REQUEST_BYTES, payload_bytes
from federation.store.bulk import MAX_BATCH_BYTES

RECORD = 240 * 1024


@dataclass(frozen=True)
class Write:
    guard: Compare
    ops: list[Op]


def _write(key: str, size: int) -> Write:
    return Write(Compare.missing(key), [Op.put(key, b"x" * size)])


class Measured:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.sizes: list[int] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def txn(self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()) -> Any:
        self.sizes.append(payload_bytes(success))
        return await self.store.txn(compares, success, failure)


async def test_changes_of_large_records_go_in_txns_bounded_by_bytes_and_one_too_large_is_left_out(
    store: Store,
) -> None:
    changes = [_write(f"big/{i:02d}", RECORD) for i in range(30)]
    huge = _write("big/huge", MAX_REQUEST_BYTES + 1)
    measured = Measured(store)

    landed = await commit_batched(measured, [*changes[:15], huge, *changes[15:]])  # type: ignore[arg-type]

    stored = {kv.key for kv in await store.range("big/")}
    print(
        f"txns sent: {len(measured.sizes)}, largest {max(measured.sizes)} bytes (the refused one included); "
        f"{len(landed)} of 31 landed"
    )
    assert landed == changes and stored == {change.guard.key for change in changes}
    assert max(size for size in measured.sizes if size <= MAX_REQUEST_BYTES) <= MAX_BATCH_BYTES, measured.sizes
