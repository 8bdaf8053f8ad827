"""What the leader publishes for ``fedq explain`` (``status/scheduler``) is one put every cycle: it must fit
one etcd request whatever the plan holds, or the cycle fails at it every time (issue 33, point 1), after
its dispatches and before the accounting's save and the store's upkeep. A backlog of 50,000 jobs no
cluster can hold (a tenant's quota's worth, submitted with ``allowUnschedulable``), each with long
reasons, once made it several megabytes."""

from __future__ import annotations

from federation.scheduler.cycle import CyclePlan
from federation.scheduler.state import FederationState
from federation.scheduler.status import status_of
from federation.store.bulk import MAX_BATCH_BYTES
from policies import Reason, Reservation

JOBS = 50_000
MESSAGE = "no cluster matches its clusterSelector " + ",".join(f"label-{i}=value-{i}" for i in range(12))


def test_the_published_status_fits_one_request_whatever_the_plan_holds() -> None:
    ids = [f"job-{i:06d}-{'x' * 20}" for i in range(JOBS)]
    clusters = {f"cluster-{c:02d}": 1 for c in range(40)}
    plan = CyclePlan(
        reasons={job: [Reason("labels", "allocate", f"{MESSAGE} ({n})") for n in range(3)] for job in ids},
        unschedulable={job: MESSAGE for job in ids},
        reservations={job: Reservation(job, clusters, 1.0, 2.0, {"cpu": 1.0}) for job in ids[:3000]},
        line=[(job, "research.vision") for job in ids],
    )

    status = status_of(plan, FederationState())
    body = status.body(1_700_000_000.0)

    print(f"status of a plan over {JOBS} jobs: {len(body)} bytes (a txn carries at most {MAX_BATCH_BYTES})")
    assert len(body) <= MAX_BATCH_BYTES, f"{len(body)} bytes"
    assert status.fields["reasons"] and status.fields["line"] and status.fields["reservations"]
