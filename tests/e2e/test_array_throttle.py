"""An array's throttle live (issue 36, acceptance 2): a server on real etcd and a simulated cluster of
2 nodes of 4 CPUs, room for 16 elements of 500m at once. ``array: {count: 20, parallelism: 4}`` (Slurm's
``--array=0-19%4``): every change of the array seen on the listing's watch stream has at most 4 elements
on the cluster (Dispatched, Admitted or Running), 4 of them run at some point, all 20 end Succeeded; and
while 4 run, the API lists the waiting elements with reason ArrayThrottle."""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

import pytest

from federation.store import EtcdServer
from tests.e2e.cluster import FAST, Federation, job

pytestmark = [pytest.mark.etcd, pytest.mark.slow]
ON_CLUSTER = {"Dispatched", "Admitted", "Running"}
LIMIT, COUNT = 4, 20


def test_at_most_four_elements_run_at_once_and_all_twenty_finish(etcd_server: EtcdServer, tmp_path: Path) -> None:
    fed = Federation(etcd_server.connection, tmp_path, FAST)
    try:
        fed.join("east", "simulated")
        changes: queue.Queue[dict[str, Any]] = queue.Queue()
        stream = fed.admin.watch_jobs(tenant="alice")
        next(stream)  # from here on every change comes on the stream
        done = threading.Event()

        def pump() -> None:
            try:
                for message in stream:
                    changes.put(message)
            except Exception:
                if not done.is_set():  # closing the client at the end ends the stream: not a failure
                    raise

        threading.Thread(target=pump, daemon=True).start()
        sweep = job("sweep", runtime="1s")
        sweep["spec"]["array"] = {"count": COUNT, "parallelism": LIMIT}
        base = fed.submit(sweep)

        states: dict[str, str] = {}
        most, throttled_seen = 0, False
        while sum(state == "Succeeded" for state in states.values()) < COUNT:
            message = changes.get(timeout=60)
            for change in message.get("changes", []):
                element = change["job"]
                if element.get("array_id") == base:
                    states[element["id"]] = element["state"]
            on_cluster = sum(state in ON_CLUSTER for state in states.values())
            most = max(most, on_cluster)
            assert on_cluster <= LIMIT, f"{on_cluster} elements on the cluster: {sorted(states.items())}"
            if on_cluster == LIMIT and not throttled_seen:
                waiting = [i for i in fed.admin.jobs(state="Pending", tenant="alice") if i.get("array_id") == base]
                codes = {i["wait"]["code"] for i in waiting if i["wait"] is not None}
                throttled_seen = "ArrayThrottle" in codes
        print(f"most on the cluster at once: {most}; ended: {sorted(set(states.values()))} x {len(states)}")
        assert most == LIMIT and throttled_seen
        assert set(states.values()) == {"Succeeded"} and len(states) == COUNT
        done.set()
    finally:
        fed.close()
