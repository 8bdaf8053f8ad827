"""The key layout under the store prefix, in one place so no module invents its own.

``jobs/<id>`` holds the record; ``view/<state>/<queue>/<id>`` is the index the list API ranges
over, and ``tenant-view/<tenant>/<state>/<queue>/<id>`` the same entry again under its tenant, so a
tenant's listing and quota sum read that tenant's jobs only; both are rewritten in the same txn as every
state change (``federation.jobs.index_ops``).

The scheduler follows one key range, ``[FOLLOWED_FROM, FOLLOWED_TO)``: what it must see (clusters,
the queue tree, jobs, reports, its own sync key) sorts inside it, and what it never reads (the index,
assignments, cancels, tokens, usage and its history) outside, so its watch carries one event per job
change rather than four. Keep new keys on the right side of that line.
"""

from __future__ import annotations

JOBS = "jobs/"
INDEX = "view/"
TENANT_INDEX = "tenant-view/"
INDEX_SYNC = (
    "view0"  # just past the index (prefix_end of it): what an API replica writes to learn its index watch caught up
)
INDEX_VERSION = "config/index-version"  # present once every job has its tenant index entry
QUEUES = "config/queues"
TOKENS = "tokens/"
STATUS = "status/scheduler"  # what the leader publishes for explain; outside what it follows
CLUSTERS = "clusters/"
REPORTS = "reports/"
HEARD = "heard/"  # when a report that changed nothing else last came: inside what the scheduler follows
SHAPES = "shapes/"
USAGE = "usage/"
HISTORY = "usage-history/"
SCHED = "sched/"
LEADER = f"{SCHED}leader"
SYNC = f"{SCHED}sync"
ASSIGNMENTS = "assign/"
CANCELS = "cancel/"
SUBMITS = "submits/"  # journals of atomic submits (federation/submits.py), outside what the scheduler follows
OPEN_SUBMITS = f"{SUBMITS}open/"
STAGED = "staged/"  # a submit's records before it commits
FOLLOWED_FROM = CLUSTERS
FOLLOWED_TO = f"{SYNC}\0"


def job(job_id: str) -> str:
    return f"{JOBS}{job_id}"


def job_index(state: str, queue: str, job_id: str) -> str:
    return f"{INDEX}{state}/{queue}/{job_id}"


def index_prefix(state: str, queue: str | None = None) -> str:
    return f"{INDEX}{state}/" if queue is None else f"{INDEX}{state}/{queue}/"


def tenant_index(tenant: str, key: str) -> str:
    """A ``view/`` key's twin in ``tenant``'s index: the same state, queue and id after the tenant."""
    return f"{TENANT_INDEX}{tenant}/{key.removeprefix(INDEX)}"


def tenant_index_parts(key: str) -> tuple[str, str, str]:
    """The tenant, state and queue of a key in the tenant index (``tenant_index`` read back)."""
    tenant, state, rest = key.removeprefix(TENANT_INDEX).split("/", 2)
    return tenant, state, rest.rpartition("/")[0]


def untenanted(tenant: str, key: str) -> str:
    """The ``view/`` key of a key in ``tenant``'s index (``tenant_index`` undone)."""
    return INDEX + key.removeprefix(f"{TENANT_INDEX}{tenant}/")


def prefix_end(prefix: str) -> str:
    """The exclusive end of the keys starting with ``prefix``, for reads that start inside that range."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def token(digest: str) -> str:
    return f"{TOKENS}{digest}"


def cluster(name: str) -> str:
    return f"{CLUSTERS}{name}"


def report(name: str) -> str:
    return f"{REPORTS}{name}"


def heard(name: str) -> str:
    return f"{HEARD}{name}"


def shape(name: str) -> str:
    return f"{SHAPES}{name}"


def assignment(cluster_name: str, job_id: str) -> str:
    """Present from dispatch until the agent acknowledges the job: what its next report receives."""
    return f"{ASSIGNMENTS}{cluster_name}/{job_id}"


def cancel(cluster_name: str, job_id: str) -> str:
    """Present while a job on a cluster must be stopped (cancel or preemption)."""
    return f"{CANCELS}{cluster_name}/{job_id}"


def open_submit(request_id: str) -> str:
    """A submit's journal from its start until its jobs are published."""
    return f"{OPEN_SUBMITS}{request_id}"


def done_submit(request_id: str) -> str:
    """A keyed submit's answer, for its retries (on a lease)."""
    return f"{SUBMITS}done/{request_id}"


def staged(request_id: str) -> str:
    """The prefix of a submit's staged record chunks."""
    return f"{STAGED}{request_id}/"
