"""PendingIndex against a plain sorted list: same order after any mix of adds, updates, removes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from policy_builders import job

from policies import PendingIndex

ops = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "bump"]), st.integers(0, 30), st.integers(0, 3), st.integers(0, 2)),
    max_size=120,
)


@settings(max_examples=100, deadline=None)
@given(ops)
def test_lanes_iterate_in_priority_then_submit_order_and_requests_add_up(
    steps: list[tuple[str, int, int, int]],
) -> None:
    index = PendingIndex()
    model: dict[str, tuple[int, float, int, str]] = {}  # id -> (priority, submit, arrival, tenant)
    arrival = 0
    for op, n, prio, tenant in steps:
        jid = f"j{n}"
        if op == "add" or (op == "bump" and jid in model):
            arrival += 1
            new_prio = prio if op == "add" else model[jid][0] + 1
            index.add(job(jid, tasks=1 + n % 3, priority=new_prio, submit=float(n % 7), tenant=f"t{tenant}"))
            model[jid] = (new_prio, float(n % 7), arrival, f"t{tenant}")
        elif op == "remove":
            removed = index.remove(jid)
            assert (removed is not None) == (jid in model)
            model.pop(jid, None)
    assert len(index) == len(model)
    for tenant in {v[3] for v in model.values()}:
        expected = sorted(
            (k for k, v in model.items() if v[3] == tenant), key=lambda k: (-model[k][0], model[k][1], model[k][2])
        )
        got = [j.id for j in index.iter_lane(("default", tenant))]
        assert got == expected
        assert [j.id for j in index.iter_lane(("default", tenant))] == expected  # reading changes nothing
    total = sum(1 + int(k[1:]) % 3 for k in model)
    assert index.queue_request("default").get("cpu", 0.0) == total
