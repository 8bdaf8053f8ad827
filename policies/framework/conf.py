"""Scheduler conf: the volcano-scheduler.conf vocabulary, in YAML.

actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: gang
    arguments: {preemptMode: down-to-min}
    enableJobOrder: false
configurations:
- name: backfill
  arguments: {depth: 1}
placement: task        # fedq: "job" puts all tasks of a job on one node (a cluster, globally)
hookTiming: false      # fedq: time every hook call against its plugin (a profile; see hooks.py)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from policies.framework.hooks import HOOKS
from policies.units import parse_duration, parse_quantity

_ENABLE = re.compile(r"^enabled?([A-Z]\w*)$")
_HOOK_ALIASES = {"job_enqueued": "job_enqueueable", "node_order": "node_order"}


class Arguments(dict[str, Any]):
    """A plugin's or action's ``arguments`` with typed getters that name the bad key."""

    def number(self, key: str, default: float) -> float:
        value = self.get(key, default)
        try:
            return float(value)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"argument {key!r} must be a number, got {value!r}") from exc

    def duration(self, key: str, default: float) -> float:
        return parse_duration(self.get(key, default))

    def flag(self, key: str, default: bool) -> bool:
        value = self.get(key, default)
        if not isinstance(value, bool):
            raise ValueError(f"argument {key!r} must be true or false, got {value!r}")
        return value

    def text(self, key: str, default: str) -> str:
        return str(self.get(key, default))

    def quantities(self, key: str) -> dict[str, float]:
        value = self.get(key) or {}
        if not isinstance(value, Mapping):
            raise ValueError(f"argument {key!r} must be a mapping of resource to quantity, got {value!r}")
        return {str(k): parse_quantity(v) for k, v in value.items()}


@dataclass(slots=True)
class PluginConf:
    name: str
    arguments: Arguments = field(default_factory=Arguments)
    disabled_hooks: frozenset[str] = frozenset()


@dataclass(slots=True)
class SchedulerConf:
    actions: list[str]
    tiers: list[list[PluginConf]]
    configurations: dict[str, Arguments] = field(default_factory=dict)
    placement: str = "task"
    hook_timing: bool = False

    def action_arguments(self, name: str) -> Arguments:
        return self.configurations.get(name, Arguments())

    def plugin(self, name: str) -> PluginConf | None:
        return next((p for tier in self.tiers for p in tier if p.name == name), None)


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


def _plugin(raw: Any, where: str) -> PluginConf:
    if not isinstance(raw, Mapping) or "name" not in raw:
        raise ValueError(f"{where}: a plugin needs a name, got {raw!r}")
    disabled = set()
    for key, value in raw.items():
        match = _ENABLE.match(str(key))
        if not match:
            continue
        hook = _snake(match.group(1))
        hook = _HOOK_ALIASES.get(hook, hook)
        if hook not in HOOKS:
            raise ValueError(f"{where}: {key!r} names no hook (known: {', '.join(sorted(HOOKS))})")
        if value is False:
            disabled.add(hook)
    return PluginConf(str(raw["name"]), Arguments(raw.get("arguments") or {}), frozenset(disabled))


def load_conf(source: str | Path | Mapping[str, Any]) -> SchedulerConf:
    """Parse and validate a conf from a mapping, a YAML string or a path to a YAML file."""
    from policies.framework.registry import ACTIONS, PLUGINS, load_builtins

    load_builtins()
    if isinstance(source, Path):
        raw = yaml.safe_load(source.read_text())
    elif isinstance(source, str):
        raw = yaml.safe_load(source)
    else:
        raw = source
    if not isinstance(raw, Mapping):
        raise ValueError("scheduler conf must be a mapping with 'actions' and 'tiers'")
    actions_raw = raw.get("actions", "")
    actions = (
        [a.strip() for a in actions_raw.split(",") if a.strip()] if isinstance(actions_raw, str) else list(actions_raw)
    )
    unknown = [a for a in actions if a not in ACTIONS]
    if unknown:
        raise ValueError(f"actions: unknown {unknown} (known: {', '.join(sorted(ACTIONS))})")
    tiers = []
    for t, tier in enumerate(raw.get("tiers") or []):
        plugins = [_plugin(p, f"tiers[{t}]") for p in (tier or {}).get("plugins") or []]
        bad = [p.name for p in plugins if p.name not in PLUGINS]
        if bad:
            raise ValueError(f"tiers[{t}]: unknown plugins {bad} (known: {', '.join(sorted(PLUGINS))})")
        tiers.append(plugins)
    configurations = {}
    for c in raw.get("configurations") or []:
        if not isinstance(c, Mapping) or c.get("name") not in ACTIONS:
            raise ValueError(f"configurations: entry must name a known action, got {c!r}")
        configurations[str(c["name"])] = Arguments(c.get("arguments") or {})
    placement = str(raw.get("placement", "task"))
    if placement not in ("task", "job"):
        raise ValueError(f"placement must be 'task' or 'job', got {placement!r}")
    hook_timing = raw.get("hookTiming", False)
    if not isinstance(hook_timing, bool):
        raise ValueError(f"hookTiming must be true or false, got {hook_timing!r}")
    return SchedulerConf(actions, tiers, configurations, placement, hook_timing)
