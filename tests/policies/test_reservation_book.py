"""The reservation book finds a job's earliest start on one node without building every node's profile.

A node without a reservation only gains free resources over time, so its first fit is bisected in its
releases; a node with one is swept through its profile. The worked example checks known answers; the
property checks the bisection against sweeping fully built profiles, after random task starts,
roll-backs, tasks placed before the book opened, and reservations.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from policies.profile import Releases, ReservationBook

INF = math.inf


def test_earliest_start_on_one_node_with_known_answers() -> None:
    # a: 2 cpu idle, 2 more at t=10, 4 more at t=20. b: nothing idle, 8 cpu at t=15.
    releases = {"a": Releases([(20.0, {"cpu": 4.0}), (10.0, {"cpu": 2.0})]), "b": Releases([(15.0, {"cpu": 8.0})])}
    book = ReservationBook(0.0, {"a": {"cpu": 2.0}, "b": {}}, releases)
    assert book.earliest(["a", "b"], {"cpu": 2.0}, 1, 100.0, whole=True) == (0.0, {"a": 1})
    assert book.earliest(["a", "b"], {"cpu": 4.0}, 1, 100.0, whole=True) == (10.0, {"a": 1})
    assert book.earliest(["a", "b"], {"cpu": 8.0}, 1, 100.0, whole=True) == (15.0, {"b": 1})
    assert book.earliest(["a"], {"cpu": 4.0}, 2, 100.0, whole=True) == (20.0, {"a": 2})  # 8 cpu on a at 20
    assert book.earliest(["a", "b"], {"cpu": 4.0}, 2, 100.0, whole=True) == (15.0, {"b": 2})
    assert book.earliest(["a", "b"], {"cpu": 4.0}, 3, 100.0, whole=True) is None
    # A task started now on a for 30 s takes 2 cpu until t=30: a has 6 cpu at 20, 8 at 30.
    book.consume("a", {"cpu": 2.0}, 0.0, 30.0)
    assert book.earliest(["a"], {"cpu": 8.0}, 1, 100.0, whole=True) == (30.0, {"a": 1})
    # A reservation of 6 cpu on b over [15, 45) leaves b 2 cpu until 45: 4 cpu for 10 s fit on b only at 45,
    # and on a (2 cpu at 10 while that task runs, 6 at 20) at 20, so a wins.
    book.reserve("r", 15.0, 30.0, {"cpu": 6.0}, {"b": 1})
    assert book.earliest(["b"], {"cpu": 4.0}, 1, 10.0, whole=True) == (45.0, {"b": 1})
    assert book.earliest(["b", "a"], {"cpu": 4.0}, 1, 10.0, whole=True) == (20.0, {"a": 1})
    # 4 cpu for 20 s: on b the window [15, 35) would overlap the reservation, so b first fits at 45 still.
    assert book.earliest(["b"], {"cpu": 4.0}, 1, 20.0, whole=True) == (45.0, {"b": 1})


def test_a_tie_goes_to_the_first_node_named() -> None:
    releases = {"c": Releases([(5.0, {"cpu": 4.0})]), "d": Releases([(5.0, {"cpu": 4.0})])}
    book = ReservationBook(0.0, {"c": {}, "d": {}}, releases)
    assert book.earliest(["d", "c"], {"cpu": 4.0}, 1, 10.0, whole=True) == (5.0, {"d": 1})
    assert book.earliest(["c", "d"], {"cpu": 4.0}, 1, 10.0, whole=True) == (5.0, {"c": 1})


amounts = st.integers(0, 8).map(float)
ends = st.lists(st.tuples(st.integers(-5, 60).map(float), amounts), max_size=4)


@st.composite
def books(draw: st.DrawFn) -> tuple[list[str], ReservationBook, ReservationBook]:
    """Two books built the same way from one random world: one left lazy, one with every profile built."""
    names = [f"n{i}" for i in range(draw(st.integers(1, 4)))]
    idle = {n: {"cpu": draw(amounts)} for n in names}
    steps = {n: [(t, {"cpu": a}) for t, a in draw(ends)] for n in names}
    later = draw(
        st.lists(
            st.tuples(
                st.sampled_from(names),
                st.sampled_from(["start", "start", "rollback", "placed", "reserve"]),
                amounts,
                st.integers(1, 50).map(float),
                st.integers(0, 40).map(float),
            ),
            max_size=8,
        )
    )
    lazy, built = (ReservationBook(0.0, idle, {n: Releases(s) for n, s in steps.items()}) for _ in range(2))
    for name in names:
        built.profile(name)
    for name, kind, amount, length, at in later:
        for book in (lazy, built):
            if kind == "start":
                book.consume(name, {"cpu": amount}, 0.0, length)
            elif kind == "rollback":  # a task started, then given back
                book.consume(name, {"cpu": amount}, 0.0, length)
                book.consume(name, {"cpu": amount}, 0.0, length, times=-1)
            elif kind == "placed":
                book.release(name, at, {"cpu": amount})
            else:
                book.reserve(f"r-{at}", at, length, {"cpu": amount}, {name: 1})
    return names, lazy, built


@given(books(), st.integers(1, 10).map(float), st.integers(1, 3), st.sampled_from([5.0, 30.0, None]))
def test_bisecting_unreserved_nodes_agrees_with_sweeping_every_profile(
    world: tuple[list[str], ReservationBook, ReservationBook], cpu: float, count: int, walltime: float | None
) -> None:
    names, lazy, built = world
    req = {"cpu": cpu}
    span = walltime if walltime is not None else INF
    expected = None
    for t in sorted({t for n in names for t in built.profile(n).times}):
        fitting = [n for n in names if built.profile(n).count(req, t, t + span) >= count]
        if fitting:
            expected = (t, {fitting[0]: count})
            break
    assert lazy.earliest(names, req, count, walltime, whole=True) == expected
