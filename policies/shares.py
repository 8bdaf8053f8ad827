"""Fair-share maths as pure functions, shared by the plugins and the federation's accounting.

- HTCondor user priorities: ``decay_rup`` and ``effective_priority``.
- ``water_fill``: weighted max-min division of one quantity between claims with floors and ceilings.
  Proportion's deserved share (weights) and HTCondor's pie spin (weights 1/EUP) are both this.
- ``divide_tree``: the same, level by level down a queue tree, with guarantees, caps and acceptSurplus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from policies.resources import EPS, Resources

#: HTCondor: every user begins at, and never goes below, a real priority of 0.5.
RUP_FLOOR = 0.5


def decay_rup(rup: float, rate: float, dt: float, half_life: float) -> float:
    """RUP(t) = b*RUP(t-dt) + (1-b)*rate with b = 0.5**(dt/half_life), floored at 0.5."""
    if half_life <= 0:
        raise ValueError(f"half_life must be positive, got {half_life}")
    if dt < 0:
        raise ValueError(f"dt must not be negative, got {dt}")
    beta: float = 0.5 ** (dt / half_life)
    return max(RUP_FLOOR, beta * rup + (1.0 - beta) * rate)


def effective_priority(rup: float, priority_factor: float = 1.0, weight: float = 1.0) -> float:
    """EUP = RUP x priorityFactor / weight: lower is better, and slices go as 1/EUP."""
    if weight <= 0:
        raise ValueError(f"weight must be positive, got {weight}")
    return max(RUP_FLOOR, rup) * priority_factor / weight


def water_fill(
    capacity: float, floors: Sequence[float], ceilings: Sequence[float], weights: Sequence[float]
) -> list[float]:
    """Divide ``capacity``: each claim first gets its floor (scaled down together if they do not
    fit), then the rest in proportion to weight, never past its ceiling; what a saturated claim
    cannot take is spun again to the others until nothing is left or everyone is full."""
    n = len(floors)
    ceil = [max(c, 0.0) for c in ceilings]
    got = [min(max(f, 0.0), ceil[i]) for i, f in enumerate(floors)]
    floor_sum = sum(got)
    if floor_sum > capacity + EPS:
        ratio = max(capacity, 0.0) / floor_sum
        return [g * ratio for g in got]
    left = capacity - floor_sum
    active = [i for i in range(n) if ceil[i] - got[i] > EPS and weights[i] > 0]
    while left > EPS and active:
        wsum = sum(weights[i] for i in active)
        handed = 0.0
        still = []
        for i in active:
            give = min(left * weights[i] / wsum, ceil[i] - got[i])
            got[i] += give
            handed += give
            if ceil[i] - got[i] > EPS:
                still.append(i)
        left -= handed
        if len(still) == len(active):
            break
        active = still
    return got


def pie_spin(capacity: float, demands: Mapping[str, float], eups: Mapping[str, float]) -> dict[str, float]:
    """HTCondor's pie spin: slices in proportion to 1/EUP, limited by demand, leftovers spun again."""
    names = list(demands)
    slices = water_fill(
        capacity, [0.0] * len(names), [demands[n] for n in names], [1.0 / max(eups[n], RUP_FLOOR) for n in names]
    )
    return dict(zip(names, slices, strict=True))


@dataclass(slots=True)
class Claim:
    """One queue of the tree as the divider sees it. ``request`` is the whole subtree's demand."""

    weight: float = 1.0
    guarantee: Resources = field(default_factory=dict)
    cap: Resources | None = None
    accept_surplus: bool = True
    request: Resources = field(default_factory=dict)


def divide_tree(
    capacity: Resources, claims: Mapping[str, Claim], children: Mapping[str, Sequence[str]], root: str = ""
) -> dict[str, Resources]:
    """Each queue's share of ``capacity``, per resource, top down.

    Among siblings: floor = min(guarantee, request) (idle guarantees are lent, and taken back by
    reclaim); ceiling = min(request, cap), and min(.., guarantee) for a queue that does not accept
    surplus (a hard quota, as HTCondor's GROUP_ACCEPT_SURPLUS=false). A parent's share is divided
    among its children the same way.
    """
    shares: dict[str, Resources] = {root: dict(capacity)}
    stack = [root]
    while stack:
        parent = stack.pop()
        kids = list(children.get(parent, ()))
        if not kids:
            continue
        budget = shares[parent]
        dims = set(budget)
        for kid in kids:
            dims |= set(claims[kid].request)
        split: dict[str, Resources] = {kid: {} for kid in kids}
        for dim in dims:
            floors, ceilings, weights = [], [], []
            for kid in kids:
                c = claims[kid]
                want = c.request.get(dim, 0.0)
                ceiling = want if c.cap is None or dim not in c.cap else min(want, c.cap[dim])
                if not c.accept_surplus:
                    ceiling = min(ceiling, c.guarantee.get(dim, 0.0))
                floors.append(min(c.guarantee.get(dim, 0.0), ceiling))
                ceilings.append(ceiling)
                weights.append(c.weight)
            for kid, got in zip(kids, water_fill(budget.get(dim, 0.0), floors, ceilings, weights), strict=True):
                split[kid][dim] = got
        shares.update(split)
        stack.extend(kids)
    return shares
