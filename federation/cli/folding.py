"""Array folding in ``fedq jobs``, as squeue shows ``123_[2-7]``: the queued elements of one array that
wait in the same state for the same reason are one row, ``<array>-[2-7,9]``, where the first of them
would be; running and finished elements keep a row each (``--expand``: every element its own row).

Folded here, after every page is read, rather than by the API: the API pages in index key order
(state, queue, id) and its ``continue`` token is an index key, so a fold on the server could only fold
within one page, and the same array would come back split across pages with counts that depend on the
page size. The client holds the whole listing before it sorts anyway. The dashboard's Jobs view folds
its page by this rule too: ``federation/ui/static/folding.js`` mirrors it, and tests/ui checks they agree.
"""

from __future__ import annotations

from typing import Any

QUEUED = ("Pending", "Reserved", "Unschedulable")


def fold_arrays(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``items`` with each group of queued elements of one array, in one state, with one reason code,
    as one item (the first's fields, ``id`` the folded name, ``elements`` how many), in the first's place."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for item in items:
        key = _group(item)
        if key is not None:
            groups.setdefault(key, []).append(item)
    out = []
    for item in items:
        key = _group(item)
        if key is None or len(groups[key]) == 1:
            out.append(item)
        elif groups[key][0] is item:
            members = groups[key]
            indexes = sorted(member["array_index"] for member in members)
            out.append({**item, "id": f"{key[0]}-[{_ranges(indexes)}]", "elements": len(members)})
    return out


def _group(item: dict[str, Any]) -> tuple[str, str, str] | None:
    array, index = item.get("array_id"), item.get("array_index")
    if not array or index is None or item["state"] not in QUEUED:
        return None
    wait = item.get("wait") or {}
    return (array, item["state"], wait.get("code", ""))


def _ranges(indexes: list[int]) -> str:
    """``[2, 3, 4, 7, 9, 10]`` as ``2-4,7,9-10``."""
    parts: list[str] = []
    start = previous = indexes[0]
    for index in [*indexes[1:], None]:
        if index is not None and index == previous + 1:
            previous = index
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if index is not None:
            start = previous = index
    return ",".join(parts)
