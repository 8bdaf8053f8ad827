"""Resource vectors as plain ``dict[str, float]`` in base units (cpu cores, memory bytes, gpus...).

Plain dicts keep snapshots cheap to build from JSON; the helpers below are the only arithmetic
the policies use, so the tolerance for fractional cpu lives in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

Resources = dict[str, float]

#: Quantities closer than this are equal: fractional cores summed many times drift by ~1e-15.
EPS = 1e-6


def fits(req: Mapping[str, float], avail: Mapping[str, float]) -> bool:
    """True when every requested quantity is available (missing keys are zero)."""
    for name, qty in req.items():
        if qty > avail.get(name, 0.0) + EPS:
            return False
    return True


def add(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    out = dict(a)
    iadd(out, b)
    return out


def sub(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    out = dict(a)
    isub(out, b)
    return out


def iadd(a: Resources, b: Mapping[str, float], times: float = 1.0) -> None:
    """In place ``a += times * b``: the hot path of allocation, so no new dict."""
    for name, qty in b.items():
        a[name] = a.get(name, 0.0) + qty * times


def isub(a: Resources, b: Mapping[str, float]) -> None:
    for name, qty in b.items():
        a[name] = a.get(name, 0.0) - qty


def scale(a: Mapping[str, float], factor: float) -> Resources:
    return {name: qty * factor for name, qty in a.items()}


def total(vectors: Iterable[Mapping[str, float]]) -> Resources:
    out: Resources = {}
    get = out.get
    for vec in vectors:
        for name, qty in vec.items():  # iadd, inlined: sessions total every node and task
            out[name] = get(name, 0.0) + qty
    return out


def minimum(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    """Per-dimension minimum over the union of names (missing = 0)."""
    return {name: min(a.get(name, 0.0), b.get(name, 0.0)) for name in set(a) | set(b)}


def maximum(a: Mapping[str, float], b: Mapping[str, float]) -> Resources:
    return {name: max(a.get(name, 0.0), b.get(name, 0.0)) for name in set(a) | set(b)}


def dominant_share(alloc: Mapping[str, float], capacity: Mapping[str, float]) -> float:
    """max over resources of alloc/capacity (DRF's dominant share); resources with no capacity skip."""
    share = 0.0
    for name, qty in alloc.items():
        cap = capacity.get(name, 0.0)
        if cap > EPS:
            share = max(share, qty / cap)
        elif qty > EPS:
            return float("inf")
    return share


def units(a: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """One scalar usage figure (Slurm's TRESBillingWeights): sum of quantity x weight."""
    return sum(qty * weights.get(name, 0.0) for name, qty in a.items())
