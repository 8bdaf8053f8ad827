"""``/v1/jobs``: submit (one, many, arrays), list, get, cancel."""

from __future__ import annotations

import base64
import contextlib
from collections import Counter
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from pydantic import BaseModel, ConfigDict, ValidationError

from federation import keys
from federation.api.dependencies import resolve as resolve_dependencies
from federation.api.deps import Caller, State, audited, read_document
from federation.api.errors import ERROR_RESPONSES, ApiError, invalid, summary
from federation.api.routes_watch import STREAM_RESPONSES, EventStream, WatchRequest, watch_listing, watch_request
from federation.api.schema import JobBatch, request_body
from federation.api.state import ServerState
from federation.api.views import Cancelled, Explanation, JobDetail, JobPage, Submitted
from federation.auth import Principal, Role
from federation.explain import explain
from federation.jobs import Conflict, NotFound, StoredJob, expand, index_ranges, index_stops
from federation.lifecycle import Cancel, Hold, transition
from federation.models import JobManifest, JobRecord, JobState, QueueTree
from federation.quotas import OverQuota, Usage, usage_of
from federation.store import Compare
from federation.submits import MAX_KEY_LENGTH, GuardFailed, InProgress, KeyReused, OutcomeUnknown, Unpublished
from federation.submits import Request as SubmitRequest
from federation.waits import wait_view
from federation.watch import Listing
from policies.units import format_duration

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=ERROR_RESPONSES)
KEY_HELP = (
    f"1 to {MAX_KEY_LENGTH} printable ASCII characters naming this request: a retry with the same key answers "
    "the first request's result and writes nothing new (kept 24 h, per tenant)"
)


def _submitting_tenant(who: Principal, tenant: str | None) -> str:
    if who.role is Role.TENANT:
        if tenant not in (None, who.name):
            raise ApiError(403, f"tenant {who.name!r} cannot submit as tenant {tenant!r}")
        return who.name
    if who.is_admin:
        if not tenant:
            raise ApiError(
                422,
                "an admin submitting must name the tenant: ?tenant=NAME",
                [{"field": "tenant", "message": "required for admin submissions"}],
            )
        return tenant
    raise ApiError(403, f"a {who.role.value} token cannot submit jobs")


def _documents(doc: Any, limit: int) -> tuple[list[Any], bool]:
    if isinstance(doc, dict) and set(doc) == {"jobs"}:
        jobs = doc["jobs"]
        if not isinstance(jobs, list) or not jobs:
            raise ApiError(
                422,
                "'jobs' must be a non-empty list of job specs",
                [{"field": "jobs", "message": "expected a non-empty list"}],
            )
        if len(jobs) > limit:
            raise ApiError(
                413,
                f"{len(jobs)} jobs in one request; the limit is {limit}",
                [{"field": "jobs", "message": f"at most {limit} jobs per request"}],
            )
        return jobs, True
    if not isinstance(doc, dict):
        raise ApiError(422, 'the body must be a job spec object or {"jobs": [...]}')
    return [doc], False


def _tenant_in_spec(document: Any, prefix: str) -> None:
    """A tenant in the spec is refused with what to do instead: the tenant is the token's."""
    spec = document.get("spec") if isinstance(document, dict) else None
    if isinstance(spec, dict) and "tenant" in spec:
        message = (
            "the tenant comes from your token, not the spec: remove it (an admin submits for a tenant "
            "with ?tenant=NAME)"
        )
        raise ApiError(422, f"{prefix}spec.tenant: {message}", [{"field": f"{prefix}spec.tenant", "message": message}])


def _usable_queues(tree: QueueTree, tenant: str) -> str:
    usable = sorted(node.path for node in tree.leaves() if tree.may_submit(tenant, node.path))
    return f"tenant {tenant!r} may submit to {', '.join(usable) or 'no queue'}"


def _check_against_tree(manifest: JobManifest, tenant: str, tree: QueueTree, state: State, prefix: str) -> None:
    spec = manifest.spec
    node = tree.get(spec.queue)
    if node is None:
        usable = _usable_queues(tree, tenant)
        raise ApiError(
            422,
            f"unknown queue {spec.queue!r}: {usable}",
            [{"field": f"{prefix}spec.queue", "message": f"no such queue; {usable}"}],
        )
    if not node.is_leaf:
        raise ApiError(
            422,
            f"queue {spec.queue!r} is not a leaf queue; submit to one of its children",
            [{"field": f"{prefix}spec.queue", "message": "not a leaf queue"}],
        )
    if not tree.may_submit(tenant, spec.queue):
        raise ApiError(403, f"tenant {tenant!r} may not submit to queue {spec.queue!r}; {_usable_queues(tree, tenant)}")
    limits = state.config.api
    if spec.array is not None and spec.array.count > limits.max_array_count:
        raise ApiError(
            422,
            f"array count {spec.array.count} is over the limit of {limits.max_array_count}",
            [{"field": f"{prefix}spec.array.count", "message": f"at most {limits.max_array_count}"}],
        )
    if limits.require_walltime and spec.walltime is None:
        raise ApiError(
            422,
            "this federation requires spec.walltime on every job",
            [{"field": f"{prefix}spec.walltime", "message": "required"}],
        )


@router.post(
    "",
    status_code=201,
    dependencies=[Depends(audited("job.submit", admin_only=True))],
    response_model=Submitted,
    response_model_exclude_unset=True,
    openapi_extra=request_body(JobManifest | JobBatch),
)
async def submit(
    request: Request,
    state: State,
    who: Caller,
    tenant: str | None = None,
    allow_unschedulable: Annotated[bool, Query(alias="allowUnschedulable")] = False,
    hold: bool = False,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", description=KEY_HELP)] = None,
) -> dict[str, Any]:
    """``allowUnschedulable=true`` accepts a job no joined cluster could run (it waits Unschedulable);
    ``hold=true`` submits it held (it waits in line until released)."""
    doc = await read_document(request, state.config.api.max_body_bytes)
    owner = _submitting_tenant(who, tenant)
    key = _checked_key(idempotency_key)
    attempt = SubmitRequest.of(
        owner, key, doc, {"allowUnschedulable": allow_unschedulable, **({"hold": True} if hold else {})}
    )
    try:
        replayed = await state.submits.replay(attempt)
    except (KeyReused, InProgress) as exc:
        raise _key_refused(exc) from None
    except Unpublished as exc:
        raise _unpublished(exc) from None
    if replayed is not None:
        return replayed
    documents, bulk = _documents(doc, state.config.api.max_jobs_per_request)
    # Checked against the tree this replica holds, unread, and written only if it is still the stored one;
    # a refusal against a tree that is no longer the stored one, or a tree that moved before the write,
    # is checked again against the tree read afresh.
    kept = state.queues.held()
    if kept is not None:
        try:
            prepared = await _prepare(state, who, owner, documents, bulk, kept[0], hold, allow_unschedulable)
        except ApiError:
            if await state.queues.get() is kept[0]:  # the stored tree refused it: no second check
                raise
        else:
            with contextlib.suppress(GuardFailed):
                return await _write(state, attempt, owner, prepared, kept[1])
    tree = await state.queues.get()
    fresh = state.queues.held()
    if tree is None or fresh is None:
        raise ApiError(409, "the federation has no queues yet: an admin must run `fedq queues apply FILE`")
    prepared = await _prepare(state, who, owner, documents, bulk, tree, hold, allow_unschedulable)
    try:
        return await _write(state, attempt, owner, prepared, fresh[1])
    except GuardFailed:
        raise ApiError(
            503, "the queue tree changed while this request was checked; nothing was written: submit again"
        ) from None


@dataclass(frozen=True)
class _Prepared:
    """A request checked against a queue tree: its records, its answer, what it adds to the tenant's usage."""

    records: list[JobRecord]
    answer: dict[str, Any]
    adding: Usage


async def _prepare(
    state: ServerState,
    who: Principal,
    owner: str,
    documents: list[Any],
    bulk: bool,
    tree: QueueTree,
    hold: bool,
    allow_unschedulable: bool,
) -> _Prepared:
    """Every check of a submit against ``tree`` (nothing is written): an ApiError refuses it."""
    prefixes = [f"jobs[{number}]." if bulk else "" for number in range(len(documents))]
    manifests = [
        validated(document, owner, tree, state, prefix) for document, prefix in zip(documents, prefixes, strict=True)
    ]
    now = state.clock.now()
    expanded = [expand(manifest, owner, now) for manifest in manifests]
    await resolve_dependencies(state.store, state.jobs, manifests, expanded, owner, prefixes)
    if hold:
        expanded = [[held(record, who, now) for record in elements] for elements in expanded]
    if not allow_unschedulable:
        refused = await state.admission.refused([elements[0] for elements in expanded], prefixes)
        if refused is not None:
            job, fields = refused
            raise ApiError(422, f"job {job.name!r} could never run: {summary(fields)}", fields)
    records = [record for elements in expanded for record in elements]
    sizes = _record_sizes(expanded, prefixes, state.config.api.max_record_bytes)
    adding = usage_of(records, sizes)
    try:
        await state.usage.check(tree, owner, state.config.quotas.of(owner), adding)
    except OverQuota as exc:
        raise ApiError(429, str(exc)) from None
    await state.budget.check(2 * adding.bytes)  # a large request is staged before it is published: twice its bytes
    if bulk:
        answer: dict[str, Any] = {"ids": [record.id for record in records]}
    elif manifests[0].spec.array is not None:
        answer = {"id": records[0].array_id, "ids": [record.id for record in records]}
    else:
        answer = {"id": records[0].id}
    return _Prepared(records, answer, adding)


async def _write(
    state: ServerState, attempt: SubmitRequest, owner: str, prepared: _Prepared, guard: Compare
) -> dict[str, Any]:
    """Write a prepared request if ``guard`` (its tree is the stored one) holds; ``GuardFailed`` if not."""
    try:
        await state.submits.submit(attempt, prepared.records, prepared.answer, guard)
    except InProgress as exc:
        raise _key_refused(exc) from None
    except Unpublished as exc:
        raise _unpublished(exc) from None
    except OutcomeUnknown:
        raise ApiError(
            503,
            "the store failed while this request was being committed: it may yet be accepted; retry with the "
            "same Idempotency-Key to learn its outcome (without one, list your jobs before submitting again)",
        ) from None
    state.budget.wrote(prepared.adding.bytes)
    state.usage.accepted(owner, prepared.adding)
    for queue, count in Counter(record.queue for record in prepared.records).items():
        state.metrics.submitted.labels(queue=queue).inc(count)
    return prepared.answer


def validated(document: Any, owner: str, tree: QueueTree, state: State, prefix: str = "") -> JobManifest:
    """A job spec checked as every submit checks it: strictly, and against the queue tree for ``owner``
    (also an update's, of the job's spec with the change)."""
    _tenant_in_spec(document, prefix)
    try:
        manifest = JobManifest.model_validate(document)
    except ValidationError as exc:
        raise invalid(exc, "job spec", prefix.rstrip("."), JobManifest) from None
    _check_against_tree(manifest, owner, tree, state, prefix)
    return manifest


def held(record: JobRecord, who: Principal, now: float) -> JobRecord:
    """A new job submitted held (``?hold=true``): its history says so from the start."""
    outcome = transition(record, Hold(who.display), now)
    return record if outcome is None else outcome.record


def _checked_key(key: str | None) -> str | None:
    """The ``Idempotency-Key`` header, if it is 1 to 255 printable ASCII characters (else a 422)."""
    if key is not None and not (0 < len(key) <= MAX_KEY_LENGTH and key.isascii() and key.isprintable()):
        message = f"must be 1 to {MAX_KEY_LENGTH} printable ASCII characters, e.g. a UUID"
        raise ApiError(
            422, f"invalid Idempotency-Key header: {message}", [{"field": "Idempotency-Key", "message": message}]
        )
    return key


def _key_refused(exc: KeyReused | InProgress) -> ApiError:
    if isinstance(exc, KeyReused):
        message = "this key was sent with a different request; use a new key for a new request"
        return ApiError(422, f"Idempotency-Key reused: {message}", [{"field": "Idempotency-Key", "message": message}])
    return ApiError(409, "a request with this Idempotency-Key is being handled now: retry in a moment")


def _unpublished(exc: Unpublished) -> ApiError:
    """Accepted, but not every job is readable yet: not a 201, and not a refusal to submit again."""
    return ApiError(
        503,
        "this request was accepted, but the store failed while its jobs were being published "
        f"({exc}): the federation publishes them within seconds of the store's return. Do not submit it "
        "again: retry with the same Idempotency-Key for its ids (without one, list your jobs)",
    )


def _record_sizes(expanded: list[list[JobRecord]], prefixes: list[str], limit: int) -> list[int]:
    """Each record's bytes as stored (an array's elements are the size of its first), or a 413 for one
    over ``api.maxRecordBytes``."""
    sizes = []
    for elements, prefix in zip(expanded, prefixes, strict=True):
        size = len(elements[0].to_bytes())
        if size > limit:
            message = (
                f"would be stored as {size} bytes, over the limit of {limit} (api.maxRecordBytes): keep large "
                "data out of the spec (env, command), e.g. in a file the job reads"
            )
            name = elements[0].name
            raise ApiError(413, f"job {name!r} {message}", [{"field": f"{prefix}spec", "message": message}])
        sizes += [size] * len(elements)
    return sizes


async def _owned(state: State, who: Principal, job_id: str) -> StoredJob:
    try:
        stored = await state.jobs.get(job_id)
    except NotFound:
        kept = format_duration(state.config.store.keep_finished)
        raise ApiError(404, f"job {job_id!r} not found (finished jobs are removed {kept} after they end)") from None
    if who.role is Role.TENANT and stored.record.tenant != who.name:
        raise ApiError(403, f"job {job_id!r} belongs to another tenant")
    if who.role not in (Role.TENANT, Role.ADMIN):
        raise ApiError(403, f"a {who.role.value} token cannot read jobs")
    return stored


class _Cursor(BaseModel):
    """What a ``continue`` token carries: the last index key read and the filters of its listing (``state``:
    its states, comma-separated)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    after: str
    state: str | None
    queue: str | None
    tenant: str | None

    def encode(self) -> str:
        return base64.b64encode(self.model_dump_json().encode(), b"-_").decode()


def _bad_continue(message: str) -> ApiError:
    return ApiError(400, f"invalid continue token: {message}", [{"field": "continue", "message": message}])


def _resume_after(token: str, filters: tuple[str | None, str | None, str | None], ranges: list[str]) -> str:
    """The index key a token resumes after, if it is one this API issued for these same filters.

    The tenant filter applies whatever the token says, so a forged position could only skip ahead
    in the caller's own listing; the checks are there to say so plainly when a token is misused.
    """
    try:
        cursor = _Cursor.model_validate_json(base64.b64decode(token, altchars=b"-_", validate=True))
    except (ValueError, ValidationError):
        raise _bad_continue("not a token from this API; pass the previous page's 'continue' unchanged") from None
    if (cursor.state, cursor.queue, cursor.tenant) != filters:
        raise _bad_continue(
            f"it was issued for state={cursor.state}, queue={cursor.queue}, tenant={cursor.tenant}; "
            "repeat that listing's filters, or list again without 'continue'"
        )
    if not any(cursor.after.startswith(prefix) for prefix in ranges):
        raise _bad_continue("its position is outside this listing")
    return cursor.after


def _listing_ranges(tree: QueueTree | None, listed: str | None, queue: str | None) -> list[str]:
    """The index ranges of a listing: a leaf queue's own; an inner queue's, those of the leaves under it
    (jobs live only in leaves), in key order."""
    node = None if tree is None or queue is None else tree.get(queue)
    if tree is None or node is None or node.is_leaf:
        return index_ranges(listed, queue)
    under = [leaf.path for leaf in tree.leaves() if leaf.path.startswith(f"{node.path}.")]
    return sorted(prefix for leaf in under for prefix in index_ranges(listed, leaf))


def _stops(tree: QueueTree | None, tenant: str | None) -> list[str]:
    """Where a listing's reads end: at each state, and in the whole index at each leaf queue too. A
    tenant's own index holds its jobs alone, so a read to its state's end costs its own jobs, and is
    cheaper than a read per empty queue (about 1 ms each at 1,000,000 jobs)."""
    return index_stops([leaf.path for leaf in tree.leaves()] if tree is not None and tenant is None else [])


async def _known_empty(state: State, tree: QueueTree) -> tuple[list[tuple[str, str]], int]:
    """The index intervals, in key order, this replica's counts say hold no job, and the revision they say
    it at: each empty state, and in a state whose jobs are all in the tree's leaves, each empty leaf with
    the gap before it. A listing skips them rather than ask the store about each (a read per state and
    leaf, about 1 ms each at 1,000,000 jobs), and reads the rest at that revision: a job that has moved
    into a skipped interval since is then read where it was."""
    states = sorted(member.value for member in JobState)
    leaves = [node.path for node in tree.leaves()]
    prefixes = [keys.index_prefix(job_state, queue) for job_state in states for queue in (None, *leaves)]
    counted, revision = await state.counts.counts_at(prefixes)
    found = dict(zip(prefixes, counted, strict=True))
    empty = []
    after = keys.INDEX  # the end of the state before: no job's key sorts between two states' ranges
    for job_state in states:
        whole = keys.index_prefix(job_state)
        own = sorted(keys.index_prefix(job_state, leaf) for leaf in leaves)
        if found[whole] == 0:
            empty.append((after, keys.prefix_end(whole)))
        elif found[whole] == sum(found[prefix] for prefix in own):  # no job of a queue the tree lost
            ends = [after, *(keys.prefix_end(prefix) for prefix in own)]
            empty += [(low, high) for low, high, prefix in zip(ends, ends[1:], own, strict=False) if not found[prefix]]
        after = keys.prefix_end(whole)
    return empty, revision


_STATES_HELP = "only jobs in this state; repeat for several (state=Pending&state=Running), one request for them all"


@router.get("", response_model=JobPage, responses=STREAM_RESPONSES)
async def list_jobs(
    state: State,
    who: Caller,
    stream: Annotated[WatchRequest, Depends(watch_request)],
    job_states: Annotated[list[JobState] | None, Query(alias="state", description=_STATES_HELP)] = None,
    queue: str | None = None,
    tenant: str | None = None,
    limit: Annotated[int | None, Query(ge=1, le=10_000)] = None,
    token: Annotated[str | None, Query(alias="continue")] = None,
) -> dict[str, Any] | EventStream:
    """A page in index key order (state, queue, id), read from where the previous page stopped; an
    inner ``queue`` lists its whole subtree.

    A page reads at most ``api.listScanLimit`` index keys, so a page may be shorter than ``limit``
    (even empty) while ``continue`` is set: follow it until it is null. A page is the index at one
    revision: a job that changes state meanwhile is listed once; across pages it may come twice or not
    at all. ``watch=true``: instead, a stream of the listing's changes (``routes_watch``).
    """
    if who.role is Role.TENANT:
        if tenant not in (None, who.name):
            raise ApiError(403, f"tenant {who.name!r} cannot list jobs of tenant {tenant!r}")
        tenant = who.name
    elif not who.is_admin:
        raise ApiError(403, f"a {who.role.value} token cannot list jobs")
    states = sorted({value.value for value in job_states or []})
    listed = ",".join(states) or None  # as a cursor names them
    if stream.watch:
        if len(states) > 1:
            message = "a watch follows one state or all: give state at most once, and filter its changes"
            raise ApiError(422, f"state: {message}", [{"field": "state", "message": message}])
        paged = limit is not None or token is not None
        return await watch_listing(state, who, stream, Listing(listed, queue, tenant), paged=paged)
    tree = await state.queues.get()
    each: list[str | None] = [*states] or [None]
    ranges = sorted(prefix for one in each for prefix in _listing_ranges(tree, one, queue))
    after = None if token is None else _resume_after(token, (listed, queue, tenant), ranges)
    empty, revision = await _known_empty(state, tree) if tree is not None and tenant is None else ([], 0)
    page = await state.jobs.summary_page(
        ranges,
        after=after,
        tenant=tenant,
        limit=limit or state.config.api.page_size,
        max_keys=state.config.api.list_scan_limit,
        stops=_stops(tree, tenant),
        empty=empty,
        revision=revision,
    )
    view, now = await state.status.get(), state.clock.now()
    for item in page.items:
        item["wait"] = wait_view(item, view, now)
    if page.resume_after is None:
        return {"items": page.items, "continue": None}
    cursor = _Cursor(after=page.resume_after, state=listed, queue=queue, tenant=tenant)
    return {"items": page.items, "continue": cursor.encode()}


@router.get("/{job_id}", response_model=JobDetail, response_model_exclude_unset=True)
async def get_job(job_id: str, state: State, who: Caller) -> dict[str, Any]:
    stored = await _owned(state, who, job_id)
    detail = _detail(stored.record)
    detail["wait"] = wait_view(stored.record.summary(), await state.status.get(), state.clock.now())
    return detail


def _detail(record: JobRecord) -> dict[str, Any]:
    detail = record.model_dump(mode="json", by_alias=True)
    spec = record.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    # The spec as submitted, but each task with its name and replicas even when they were the defaults:
    # logs, events and the dashboard name tasks by them, and a client should not need the defaults.
    spec["tasks"] = [
        {"name": task.name, "replicas": task.replicas, **given}
        for task, given in zip(record.spec.tasks, spec["tasks"], strict=True)
    ]
    detail["spec"] = spec
    return detail


@router.get("/{job_id}/explain", response_model=Explanation, response_model_exclude_unset=True)
async def explain_job(job_id: str, state: State, who: Caller) -> dict[str, Any]:
    """Why the job waits: its place in line, the policy holding it, reservations, a projected start."""
    stored = await _owned(state, who, job_id)
    viewer = who.name if who.role is Role.TENANT else None
    return await explain(
        state.store,
        state.counts,
        state.clusters,
        state.status,
        stored.record,
        state.config.cluster.lost_after,
        viewer,
    )


@router.delete("/{job_id}", status_code=200, dependencies=[Depends(audited("job.cancel"))], response_model=Cancelled)
async def cancel_job(job_id: str, state: State, who: Caller) -> dict[str, Any]:
    """Queued jobs are cancelled at once; running ones are marked and stopped by their cluster's agent."""
    for _ in range(5):
        stored = await _owned(state, who, job_id)
        record = stored.record
        if record.state.terminal:
            raise ApiError(409, f"job {job_id!r} already finished ({record.state.value})")
        try:
            stored = await state.jobs.apply(stored, Cancel(who.name), now=state.clock.now())
            return {
                "id": job_id,
                "state": stored.record.state.value,
                "cancel_requested": stored.record.cancel_requested,
            }
        except Conflict:
            continue
    raise ApiError(409, f"job {job_id!r} kept changing while cancelling; try again")
