"""One job's turn: place it, then commit, keep as pipelined, or roll back (shared by allocate and
backfill)."""

from __future__ import annotations

from policies.framework.decisions import GANG, INSUFFICIENT, RESERVATION, split_reason
from policies.framework.session import Session
from policies.framework.statement import Statement
from policies.snapshot import JobInfo

#: Failures that time can cure, so a reservation makes sense.
WAITABLE = frozenset({INSUFFICIENT, RESERVATION, GANG})


def try_job(ssn: Session, job: JobInfo) -> tuple[bool, bool]:
    """Returns (placed something and kept it, the job could start later if it waits)."""
    veto = ssn.job_valid(job)
    if veto is not None:
        code, message = split_reason(str(veto[1]))
        ssn.why(job, code, veto[0], message)
        return False, False
    stmt = Statement(ssn)
    placed = ssn.placer.place(job, stmt)
    if placed and ssn.job_ready(job):
        stmt.commit()
        return True, False
    if placed and ssn.job_pipelined(job) and ssn.pipelined_count(job) > 0:
        stmt.commit(bind=False)
        return True, False
    if placed:
        ssn.why(job, GANG, "gang", f"only part of the gang of {job.gang_size} fits now")
    stmt.discard()
    return False, last_code(ssn, job) in WAITABLE


def last_code(ssn: Session, job: JobInfo) -> str | None:
    """The code of the last reason the session gave ``job`` (None: none yet)."""
    reasons = ssn.decisions.reasons.get(job.id)
    return reasons[-1].code if reasons else None
