"""``/v1/queues``: the queue tree with its counts, and applying one."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError

from federation import keys
from federation.api.deps import AuditEntry, Caller, State, audited, read_document, require_admin
from federation.api.errors import ERROR_RESPONSES, ApiError, invalid
from federation.api.schema import request_body
from federation.api.state import UnreadableTree
from federation.api.views import Applied, QueueTreeView
from federation.models import JobState, QueueNode, QueueTree, QueueTreeConfig
from federation.store import count_many

router = APIRouter(tags=["queues"], responses=ERROR_RESPONSES)

_COUNTED = (
    JobState.PENDING,
    JobState.RESERVED,
    JobState.UNSCHEDULABLE,
    JobState.DISPATCHED,
    JobState.ADMITTED,
    JobState.RUNNING,
)


async def _counts(tree: QueueTree, counter: Callable[[Sequence[str]], Awaitable[list[int]]]) -> dict[str, Counter[str]]:
    """Unfinished jobs per leaf of ``tree`` and state (jobs are only ever submitted to its leaves), from
    ``counter`` (keys per index prefix): the replica's counts for the view, which cost the tree; the
    store's for an apply, which may refuse it and then must have written nothing, not even the counts'
    sync."""
    pairs = [(node.path, job_state.value) for node in tree.leaves() for job_state in _COUNTED]
    found = await counter([keys.index_prefix(job_state, queue) for queue, job_state in pairs])
    out: dict[str, Counter[str]] = {}
    for (queue, job_state), count in zip(pairs, found, strict=True):
        if count:
            out.setdefault(queue, Counter())[job_state] = count
    return out


def _node_view(node: QueueNode, counts: dict[str, Counter[str]]) -> dict[str, Any]:
    config = node.config
    children = [_node_view(child, counts) for child in node.children]
    own = counts.get(node.path, Counter())
    pending = sum(own[s.value] for s in (JobState.PENDING, JobState.RESERVED, JobState.UNSCHEDULABLE))
    running = sum(own[s.value] for s in (JobState.DISPATCHED, JobState.ADMITTED, JobState.RUNNING))
    return {
        "path": node.path,
        "name": config.name,
        "weight": config.weight,
        "guarantee": config.guarantee,
        "cap": config.cap,
        "acceptSurplus": config.accept_surplus,
        "priorityFactor": config.priority_factor,
        "tenants": config.tenants,
        "pending": pending + sum(child["pending"] for child in children),
        "running": running + sum(child["running"] for child in children),
        "children": children,
    }


@router.get("/v1/queues", response_model=QueueTreeView)
async def get_queues(state: State, who: Caller) -> dict[str, Any]:
    tree = await state.queues.get()
    if tree is None:
        return {"queues": []}
    counts = await _counts(tree, state.counts.counts)
    roots = [node for node in tree.nodes.values() if node.parent is None]
    return {"queues": [_node_view(node, counts) for node in roots]}


@router.put("/v1/queues", response_model=Applied, openapi_extra=request_body(QueueTreeConfig))
async def put_queues(
    request: Request, state: State, who: Caller, audit: Annotated[AuditEntry, Depends(audited("queues.apply"))]
) -> dict[str, Any]:
    require_admin(who)
    doc = await read_document(request, state.config.api.max_body_bytes)
    try:
        config = QueueTreeConfig.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "queue tree") from None
    new_tree = QueueTree(config)
    try:
        old_tree = await state.queues.get()
    except UnreadableTree:
        old_tree = None  # this apply is the repair; which leaves had jobs cannot be read from it
    counts = await _counts(old_tree, partial(count_many, state.store)) if old_tree is not None else {}
    busy = [queue for queue in counts if (node := new_tree.get(queue)) is None or not node.is_leaf]
    if busy:
        raise ApiError(
            409,
            f"queues with unfinished jobs would lose their leaf: {', '.join(sorted(busy))}",
            [
                {"field": "queues", "message": f"keep leaf queue {queue!r} until its jobs finish"}
                for queue in sorted(busy)
            ],
        )
    tree = await state.queues.apply(config)
    audit.target["queues"] = sorted(tree.nodes)
    return {"applied": sorted(tree.nodes)}
