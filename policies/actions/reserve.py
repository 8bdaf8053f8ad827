"""reserve: book reservations for the jobs allocate stopped at, without backfilling.

``depth``: how many reservations a cycle books (1 = EASY, N, or 'all' = conservative).
"""

from __future__ import annotations

from policies.actions.reserving import book_blocked, depth_of
from policies.framework.registry import register_action
from policies.framework.session import Action, Session


@register_action
class Reserve(Action):
    name = "reserve"

    def execute(self, ssn: Session) -> None:
        book_blocked(ssn, depth_of(self.arguments.get("depth", 1)))
