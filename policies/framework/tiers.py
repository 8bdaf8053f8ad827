"""A conf's plugins, built once and kept for the conf's later sessions.

Building every tier's plugins and their hook table for each session cost about as much as a small
session's own work. A ``PluginSet`` is built by name from a conf's tiers and serves one session at a
time: ``take`` hands out an idle set built from equal tiers, or builds one, and ``give_back`` keeps
it for the next session. Tiers are compared by value with a copy taken when the set was built, so a
conf with other plugins, arguments or ``enableXxx`` flags, or one changed in place since, gets a set
of its own. A set goes back as it was built: what its plugins took of the closed session is dropped,
so a kept set holds no session alive and no plugin can read a stale one.
"""

from __future__ import annotations

import copy
import threading
from typing import TYPE_CHECKING

from policies.framework.conf import PluginConf
from policies.framework.hooks import Hooks
from policies.framework.registry import PLUGINS

if TYPE_CHECKING:
    from policies.framework.session import Plugin

KEEP = 8  # idle sets kept: one per conf a process schedules with is enough


class PluginSet:
    def __init__(self, tiers: list[list[PluginConf]], timed: bool = False) -> None:
        self.tiers = copy.deepcopy(tiers)
        self.plugins: list[Plugin] = []
        self.hooks = Hooks(timed)
        for tier, plugin_confs in enumerate(self.tiers):
            for pc in plugin_confs:
                plugin = PLUGINS[pc.name](pc.arguments)
                self.plugins.append(plugin)
                for hook, fn in plugin.hooks().items():
                    if hook not in pc.disabled_hooks:
                        self.hooks.add(hook, plugin.name, tier, fn)
        self._built = [dict(vars(plugin)) for plugin in self.plugins]

    def forget_session(self) -> None:
        """Each plugin back to its attributes as built, dropping those its last session set."""
        for plugin, built in zip(self.plugins, self._built, strict=True):
            state = vars(plugin)
            state.clear()
            state.update(built)


_idle: list[PluginSet] = []
_lock = threading.Lock()


def take(tiers: list[list[PluginConf]], timed: bool = False) -> PluginSet:
    """A set for a new session: an idle one built from equal tiers (and hook timing), else a new one."""
    with _lock:
        for i, kept in enumerate(_idle):
            if kept.tiers == tiers and kept.hooks.timed == timed:
                return _idle.pop(i)
    return PluginSet(tiers, timed)


def give_back(plugins: PluginSet) -> None:
    """Its session is closed: keep the set for the next session of its tiers (most recent first)."""
    plugins.forget_session()
    with _lock:
        if not any(kept is plugins for kept in _idle):
            _idle.insert(0, plugins)
            del _idle[KEEP:]
