"""A Ray job's ``runtimeEnv``: Ray's own schema (``working_dir``, ``pip``, ``env_vars``, ``image_uri`` ...),
checked at submit by Ray's own class and passed to Ray unchanged.

Ray takes any key as a plugin's, so a typo (``env_var``) would be silently ignored on the cluster: keys
outside Ray's public fields are refused here with the closest name. Ray is imported only when a job
has a runtime env, so the API server's start-up does not pay for it.
"""

from __future__ import annotations

import difflib
from typing import Any

FIELD = "runtimeEnv"
_WHERE = (
    "a URI the cluster can fetch: https://.../code.zip, s3://..., gs://..., or file:///shared/code.zip on a "
    "filesystem every node mounts"
)
_SHIPPED = {"working_dir": _WHERE, "py_modules": _WHERE}
"""Code a job brings: Ray uploads local directories only for its own driver, never for a task."""


def check_runtime_env(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` unchanged if Ray accepts it; else a ValueError that says what to change."""
    if not value:
        return value
    from ray.runtime_env import RuntimeEnv

    public = sorted(name for name in RuntimeEnv.known_fields if not name.startswith("_"))
    for key in value:
        if key not in public:
            close = difflib.get_close_matches(key, public, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise ValueError(f"unknown {FIELD} field {key!r}: {hint}Ray's fields are {', '.join(public)}")
    for key, where in _SHIPPED.items():
        places = value.get(key)
        for place in places if isinstance(places, list) else [places]:
            if isinstance(place, str) and "://" not in place:
                raise ValueError(
                    f"{FIELD}.{key} {place!r} is a path on the submitting machine, which no cluster can read: "
                    f"give {where}"
                )
    try:
        RuntimeEnv(**value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"Ray refuses this {FIELD}: {exc}") from None
    return value
