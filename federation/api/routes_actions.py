"""What people do to jobs after submitting them: hold, release, requeue, update, and those (with
cancel) in bulk. Each is one lifecycle event per job (``federation.actions``); a tenant acts on its own
jobs only, and a tenant cannot release a hold an admin put on."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import ValidationError

from federation.actions import Decide, Tally, act, array_pages, listed_pages, read_jobs
from federation.api.deps import Caller, State, audited, read_document
from federation.api.errors import ERROR_RESPONSES, ApiError, invalid
from federation.api.routes_jobs import _owned, validated
from federation.api.schema import request_body
from federation.api.views_actions import Acted, Action, ActionTally, JobAction, JobChange
from federation.auth import Principal, Role
from federation.jobs import NotFound, StoredJob
from federation.lifecycle import TERMINAL_STATES, Cancel, Event, Hold, IllegalTransition, Release, Requeue, Update
from federation.models import JobRecord
from federation.quotas import OverQuota, usage_of
from policies.format import format_span

router = APIRouter(prefix="/v1/jobs", tags=["jobs"], responses=ERROR_RESPONSES)
LISTED_REFUSALS = 100


def _decide(action: Action, who: Principal) -> Decide:
    """The event ``action`` is for a job, refusing what the caller may not do to it."""
    by = who.display
    if action is Action.RELEASE:

        def release(record: JobRecord) -> Event:
            if who.role is Role.TENANT and (record.held_by or "").startswith(f"{Role.ADMIN.value}/"):
                raise IllegalTransition(f"held by {record.held_by}: only an admin may release it")
            return Release(by)

        return release
    events: dict[Action, Event] = {Action.CANCEL: Cancel(by), Action.HOLD: Hold(by), Action.REQUEUE: Requeue(by)}
    event = events[action]
    return lambda _: event


def _finished(jobs: Sequence[StoredJob]) -> list[JobRecord]:
    return [stored.record for stored in jobs if stored.record.state in TERMINAL_STATES]


async def _over_quota(state: State, who: Principal, jobs: Sequence[StoredJob]) -> str | None:
    """Why requeueing ``jobs`` would take a tenant past its quota, if it would: a finished job requeued is
    unfinished work again, counted as a submit is (an admin's requeue is not limited)."""
    finished = _finished(jobs)
    if who.role is not Role.TENANT or not finished:
        return None
    tree = await state.queues.get()
    if tree is None:
        return None
    adding = usage_of(finished, [len(record.to_bytes()) for record in finished])
    try:
        await state.usage.check(tree, who.name, state.config.quotas.of(who.name), adding)
    except OverQuota as exc:
        return str(exc)
    return None


def _requeued(state: State, who: Principal, jobs: Sequence[StoredJob], tally: Tally) -> None:
    """Count the finished jobs a tenant's requeue brought back in its usage, as a submit's are."""
    back = [record for record in _finished(jobs) if record.id in tally.changed]
    if who.role is Role.TENANT and back:
        state.usage.accepted(who.name, usage_of(back, [len(record.to_bytes()) for record in back]))


async def _one(state: State, who: Principal, job_id: str, decide: Decide, *, requeue: bool = False) -> dict[str, Any]:
    stored = await _owned(state, who, job_id)
    if requeue and (refusal := await _over_quota(state, who, [stored])) is not None:
        raise ApiError(429, f"job {job_id!r} was not requeued: {refusal}")
    tally = Tally()
    await act(state.jobs, [stored], decide, state.clock.now(), tally)
    if requeue:
        _requeued(state, who, [stored], tally)
    if job_id in tally.refused:
        raise ApiError(409, f"job {job_id!r}: {tally.refused[job_id]}")
    record = (await state.jobs.get(job_id)).record
    return {"id": job_id, "state": record.state.value, "changed": job_id in tally.changed, "reason": record.reason}


@router.post("/{job_id}/hold", dependencies=[Depends(audited("job.hold", admin_only=True))], response_model=Acted)
async def hold_job(job_id: str, state: State, who: Caller) -> dict[str, Any]:
    """A queued job keeps its place in line but is not dispatched until released."""
    return await _one(state, who, job_id, _decide(Action.HOLD, who))


@router.post("/{job_id}/release", dependencies=[Depends(audited("job.release", admin_only=True))], response_model=Acted)
async def release_job(job_id: str, state: State, who: Caller) -> dict[str, Any]:
    """A held job is considered again, from its place in line."""
    return await _one(state, who, job_id, _decide(Action.RELEASE, who))


@router.post("/{job_id}/requeue", dependencies=[Depends(audited("job.requeue", admin_only=True))], response_model=Acted)
async def requeue_job(job_id: str, state: State, who: Caller) -> dict[str, Any]:
    """A running job is stopped by its cluster's agent and waits again; a Failed or Cancelled one waits
    again at once. Not a retry: ``retries`` stays, ``attempt`` grows."""
    return await _one(state, who, job_id, _decide(Action.REQUEUE, who), requeue=True)


@router.patch(
    "/{job_id}",
    dependencies=[Depends(audited("job.update", admin_only=True))],
    response_model=Acted,
    openapi_extra=request_body(JobChange),
)
async def update_job(job_id: str, request: Request, state: State, who: Caller) -> dict[str, Any]:
    """Change a queued job's priority, queue or walltime; checked as a submit is (a tenant may only
    shorten the walltime); its place in line follows on the scheduler's next cycle."""
    doc = await read_document(request, state.config.api.max_body_bytes)
    try:
        change = JobChange.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "update", model=JobChange) from None
    asked = change.model_dump(exclude_none=True)
    if not asked:
        raise ApiError(422, "nothing to update: give priority, queue or walltime")
    await _owned(state, who, job_id)  # 404/403 before anything is read of the tree
    tree = await state.queues.get()
    if tree is None:
        raise ApiError(409, "the federation has no queues yet: an admin must run `fedq queues apply FILE`")

    def update(record: JobRecord) -> Event:
        spec = record.spec.model_dump(mode="json", by_alias=True, exclude_defaults=True)
        document = {"metadata": {"name": record.name, "labels": record.labels}, "spec": spec | asked}
        new = validated(document, record.tenant, tree, state).spec
        old = record.spec.walltime
        if who.role is Role.TENANT and old is not None and (new.walltime is None or new.walltime > old):
            raise ApiError(
                403,
                f"a tenant may only shorten a job's walltime (it is {format_span(old)}); an admin may lengthen it",
            )
        return Update(who.display, new)

    return await _one(state, who, job_id, update)


@router.post(
    "/actions",
    dependencies=[Depends(audited("job.actions", admin_only=True))],
    response_model=ActionTally,
    openapi_extra=request_body(JobAction),
)
async def bulk_action(request: Request, state: State, who: Caller) -> dict[str, Any]:
    """One action on many jobs, committed in batched txns. Named ``ids`` or an ``array`` must all be the
    caller's (else a 403 and nothing changes); filters select a tenant's own jobs only."""
    doc = await read_document(request, state.config.api.max_body_bytes)
    try:
        body = JobAction.model_validate(doc)
    except ValidationError as exc:
        raise invalid(exc, "action", model=JobAction) from None
    if who.role not in (Role.TENANT, Role.ADMIN):
        raise ApiError(403, f"a {who.role.value} token cannot act on jobs")
    decide, now, tally = _decide(body.action, who), state.clock.now(), Tally()
    requeue = body.action is Action.REQUEUE
    async for page in _selected(state, who, body):
        if requeue and (refusal := await _over_quota(state, who, page)) is not None:
            over = {record.id for record in _finished(page)}
            tally.matched += len(over)
            tally.refused.update((job_id, refusal) for job_id in over)
            page = [stored for stored in page if stored.record.id not in over]
        await act(state.jobs, page, decide, now, tally)
        if requeue:
            _requeued(state, who, page, tally)
    refusals = [{"id": job_id, "message": message} for job_id, message in tally.refused.items()]
    return {
        "action": body.action.value,
        "matched": tally.matched,
        "changed": len(tally.changed),
        "unchanged": len(tally.unchanged),
        "refused": len(refusals),
        "refusals": refusals[:LISTED_REFUSALS],
    }


async def _selected(state: State, who: Principal, body: JobAction) -> AsyncIterator[list[StoredJob]]:
    """The pages of jobs a bulk action names, each checked to be the caller's before any is changed."""
    ways = [body.ids is not None, body.array is not None, body.state is not None or body.queue is not None]
    if sum(ways) != 1:
        raise ApiError(
            422,
            "name the jobs one way: ids, array, or the filters state and queue",
            [{"field": "ids", "message": "give exactly one of ids, array, state/queue"}],
        )
    tenant = body.tenant
    if who.role is Role.TENANT:
        if tenant not in (None, who.name):
            raise ApiError(403, f"tenant {who.name!r} cannot act on jobs of tenant {tenant!r}")
        tenant = who.name
    if body.ids is not None:
        yield await _named(state, who, body.ids)
    elif body.array is not None:
        found = False
        async for page in array_pages(state.jobs, body.array):
            found = True
            _own_all(who, page, f"array {body.array!r}")
            yield page
        if not found:
            raise ApiError(404, f"array {body.array!r} not found (finished jobs are removed after they end)")
    else:
        listed = body.state.value if body.state is not None else None
        async for page in listed_pages(state.jobs, listed, body.queue, tenant, state.config.api.list_scan_limit):
            yield page


async def _named(state: State, who: Principal, ids: list[str]) -> list[StoredJob]:
    limit = state.config.api.max_jobs_per_request
    if len(ids) > limit:
        raise ApiError(413, f"{len(ids)} ids in one request; the limit is {limit}")
    try:
        found = await read_jobs(state.jobs, list(dict.fromkeys(ids)))
    except NotFound as exc:
        raise ApiError(404, f"job {exc.args[0]!r} not found: nothing was changed") from None
    jobs = [stored for stored in found if stored is not None]
    _own_all(who, jobs, "these jobs")
    return jobs


def _own_all(who: Principal, jobs: list[StoredJob], what: str) -> None:
    if who.role is Role.TENANT:
        foreign = next((s.record.id for s in jobs if s.record.tenant != who.name), None)
        if foreign is not None:
            raise ApiError(403, f"job {foreign!r} of {what} belongs to another tenant: nothing was changed")
