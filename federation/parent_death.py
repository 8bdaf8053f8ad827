"""``die_with_parent``: a helper process (the scheduler beside the API, a backend beside its agent)
must not outlive the process it serves, even when that one is SIGKILLed."""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> None:
    """Linux kills this process when ``parent`` dies; if it died before we asked, exit now."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)
