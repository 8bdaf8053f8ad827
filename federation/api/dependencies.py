"""Submit-time dependency checks against the store.

At submit every ``spec.dependsOn`` entry becomes ``Wait`` entries on ids (``JobRecord.after``), or
the request is a 422 naming the entry's field and nothing is written: a ``job``/``array`` that is
not one of the tenant's own stored jobs (another tenant's job reads as unknown, so nothing of it
leaks), a ``name`` that is not exactly one job of the request, a cycle among the request's jobs,
an ``aftercorr`` without two arrays to correspond. A job or array named by ``job`` or ``array``
is read once per request however many entries name it. An array's size is its elements counted in
the store (``job-0`` .. ``job-(N-1)``): elements already removed (past ``store.keepFinished``) shorten
it, so a wait on an array whose early elements are gone may miss its last ones.
"""

from __future__ import annotations

from collections.abc import Sequence

from federation import keys
from federation.api.errors import ApiError
from federation.dependencies import DependencyError, Target, by_name, check_corr, refuse_cycles, waits_of
from federation.jobs import JobRepository, NotFound
from federation.models import JobManifest, JobRecord
from federation.store import Store, count_many


async def resolve(
    store: Store,
    jobs: JobRepository,
    manifests: Sequence[JobManifest],
    expanded: Sequence[Sequence[JobRecord]],
    tenant: str,
    prefixes: Sequence[str],
) -> None:
    """Fill each record's ``after`` from its spec's ``dependsOn``, or raise the 422 that says why not."""
    if not any(manifest.spec.depends_on for manifest in manifests):
        return
    try:
        names = by_name(manifests, prefixes)
        refuse_cycles(manifests, names, prefixes)
        own = [
            Target(elements[0].array_id or elements[0].id, len(elements) if elements[0].array_id else 0)
            for elements in expanded
        ]
        stored: dict[str, Target] = {}
        for number, manifest in enumerate(manifests):
            count = manifest.spec.array.count if manifest.spec.array is not None else None
            for position, dependency in enumerate(manifest.spec.depends_on):
                field = f"{prefixes[number]}spec.dependsOn[{position}]"
                if dependency.name is not None:
                    target = own[names[dependency.name]]
                    field += ".name"
                else:
                    key = dependency.job if dependency.job is not None else str(dependency.array)
                    field += ".job" if dependency.job is not None else ".array"
                    if key not in stored:
                        stored[key] = await _stored(store, jobs, key, dependency.job is None, tenant, field)
                    target = stored[key]
                check_corr(dependency, count, target, field)
        for manifest, elements in zip(manifests, expanded, strict=True):
            for record in elements:
                record.after = waits_of(manifest.spec.depends_on, record.array_index, stored, own, names)
    except DependencyError as exc:
        raise ApiError(422, f"{exc.field}: {exc.message}", [{"field": exc.field, "message": exc.message}]) from None


async def _stored(store: Store, jobs: JobRepository, key: str, array: bool, tenant: str, field: str) -> Target:
    """The tenant's stored job ``key`` (``array`` False; an array's id also names the whole array),
    or its array ``key`` with its element count."""
    unknown = DependencyError(
        field, f"no job or array {key!r} of tenant {tenant!r} (finished jobs are removed after store.keepFinished)"
    )
    if not array:
        try:
            found = await jobs.get(key)
        except NotFound:
            pass
        else:
            if found.record.tenant != tenant:
                raise unknown
            return Target(key)
    prefix = keys.job(f"{key}-")
    first = (await store.snapshot(prefix, limit=1)).kvs
    if not first or JobRecord.from_bytes(first[0].value).tenant != tenant:
        raise unknown
    (count,) = await count_many(store, [prefix])
    return Target(key, count)
