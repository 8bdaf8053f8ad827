"""Actions and plugins are built by name from the conf; they register themselves on import."""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from policies.framework.session import Action, Plugin

ACTIONS: dict[str, type[Action]] = {}
PLUGINS: dict[str, type[Plugin]] = {}

A = TypeVar("A", bound="type[Action]")
P = TypeVar("P", bound="type[Plugin]")


def register_action(cls: A) -> A:
    ACTIONS[cls.name] = cls
    return cls


def register_plugin(cls: P) -> P:
    PLUGINS[cls.name] = cls
    return cls


def load_builtins() -> None:
    """Import the built-in actions and plugins so that their decorators have run."""
    import policies.actions  # noqa: F401
    import policies.plugins  # noqa: F401
