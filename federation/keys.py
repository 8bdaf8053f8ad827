"""The key layout under the store prefix, in one place so no module invents its own.

``jobs/<id>`` holds the record; ``idx/<state>/<queue>/<id>`` is the index the scheduler and the
list API range over, rewritten in the same txn as every state change.
"""

from __future__ import annotations

JOBS = "jobs/"
INDEX = "idx/"
QUEUES = "config/queues"
TOKENS = "tokens/"
CLUSTERS = "clusters/"
REPORTS = "reports/"
USAGE = "usage/"
HISTORY = "history/"
LEADER = "leader"
RESERVATIONS = "reservations/"
ASSIGNMENTS = "assign/"
CANCELS = "cancel/"


def job(job_id: str) -> str:
    return f"{JOBS}{job_id}"


def job_index(state: str, queue: str, job_id: str) -> str:
    return f"{INDEX}{state}/{queue}/{job_id}"


def index_prefix(state: str, queue: str | None = None) -> str:
    return f"{INDEX}{state}/" if queue is None else f"{INDEX}{state}/{queue}/"


def token(digest: str) -> str:
    return f"{TOKENS}{digest}"


def cluster(name: str) -> str:
    return f"{CLUSTERS}{name}"


def report(name: str) -> str:
    return f"{REPORTS}{name}"


def assignment(cluster_name: str, job_id: str) -> str:
    """Present from dispatch until the agent acknowledges the job: what its next report receives."""
    return f"{ASSIGNMENTS}{cluster_name}/{job_id}"


def cancel(cluster_name: str, job_id: str) -> str:
    """Present while a job on a cluster must be stopped (cancel or preemption)."""
    return f"{CANCELS}{cluster_name}/{job_id}"
