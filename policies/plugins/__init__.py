"""Built-in plugins; importing this package registers them by name."""

from policies.plugins import (  # noqa: F401
    binpack,
    conformance,
    drf,
    fairshare,
    gang,
    nodeorder,
    predicates,
    priority,
    proportion,
    reservation,
    spread,
)
