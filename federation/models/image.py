"""Container image references: ``[registry[:port]/]name[:tag][@sha256:digest]``, as the distribution
reference grammar (docker/distribution ``reference``) has them, checked at submit so a typo is a 422
naming the task's field, not an ``InvalidImageName`` pod an hour later on some cluster."""

from __future__ import annotations

import re

MAX_IMAGE = 512
"""A reference's length limit: the name is at most 255, a tag 128, a sha256 digest 71, a registry host a few more."""
_DOMAIN_PART = r"(?:[A-Za-z0-9]|[A-Za-z0-9][-A-Za-z0-9]*[A-Za-z0-9])"
_DOMAIN = rf"{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*(?::[0-9]+)?"
_PATH_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
IMAGE = re.compile(rf"^(?:{_DOMAIN}/)?{_PATH_PART}(?:/{_PATH_PART})*(?::{_TAG})?(?:@sha256:[a-f0-9]{{64}})?$")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")


def check_image(value: str) -> str:
    """``value`` if it is an image reference, else a ValueError that shows the form."""
    if len(value) > MAX_IMAGE or not IMAGE.match(value):
        raise ValueError(
            f"invalid image reference {value!r}: use [registry/]name[:tag][@sha256:digest] with a lower-case "
            "name, e.g. 'python:3.12-slim' or 'ghcr.io/org/train:v2@sha256:<64 hex digits>'"
        )
    return value


def check_working_dir(value: str) -> str:
    """An absolute path: container runtimes resolve a relative one against nothing they document."""
    if not value.startswith("/") or "\0" in value or len(value) > 4096:
        raise ValueError(f"invalid workingDir {value!r}: an absolute path inside the image, e.g. '/work'")
    return value
