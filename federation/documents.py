"""JSON and YAML documents read within limits: how deep they nest, and how large they are with YAML's
aliases written out.

Python's json and PyYAML recurse once per level (100,000 nested arrays were a RecursionError and a 500),
and PyYAML shares an alias's value wherever it is used, so a 0.5 MB document stood for 10 MB that
validation, the store and every reader then walked. One walk checks both; every body and every file
the federation reads comes through here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml

MAX_DEPTH = 64
"""Default nesting limit: a bulk submit nests 7 deep, a queue tree two per level of queues."""
MAX_EXPANDED_BYTES = 8 * 1024 * 1024
"""Default size limit of a document with its YAML aliases expanded (the API's default body limit)."""

# A string's run of plain bytes is taken at once, not a byte per alternation: 2 ms over a 300 KB string,
# not 40 ms of the replica's event loop that every other request waits behind (tests/abuse/test_tenant_abuse.py).
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_SQUARE = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))


@dataclass(frozen=True)
class DocumentLimits:
    max_depth: int = MAX_DEPTH
    max_expanded_bytes: int = MAX_EXPANDED_BYTES


class DocumentRefused(ValueError):
    """A document that is malformed or over a limit; ``field`` is where (``body`` for the whole)."""

    def __init__(self, status: int, message: str, field: str = "body") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


def parse_json(raw: bytes, limits: DocumentLimits) -> Any:
    """JSON has no aliases, so only its depth is checked, on its brackets outside strings (a walk of the
    parsed document in Python took 0.9 s over a 4 MB bulk submit)."""
    try:
        document = json.loads(raw)
    except RecursionError:
        raise _too_deep(limits, "body") from None
    except ValueError as exc:  # JSONDecodeError, bad UTF-8, an integer of more than 4,300 digits
        raise DocumentRefused(400, f"malformed JSON body: {exc}") from None
    _check_brackets(_JSON_STRING.sub(b"", raw), limits)
    return document


def parse_yaml(text: bytes | str, limits: DocumentLimits) -> Any:
    """Flow brackets are counted before parsing (brackets in strings too): PyYAML's scanner is quadratic in
    their depth, 2 s for 10,000 ``[``. Block nesting is checked on the parsed document, with the aliases."""
    _check_brackets(text.encode() if isinstance(text, str) else text, limits)
    try:
        document = yaml.safe_load(text)
    except RecursionError:
        raise _too_deep(limits, "body") from None
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: an integer of more than 4,300 digits
        raise DocumentRefused(400, f"malformed YAML: {exc}") from None
    check(document, limits)
    return document


def check(document: Any, limits: DocumentLimits) -> None:
    """Walk ``document`` once, depth first, counting each value where it appears (an alias as often as it
    is used) at about its size as compact JSON, so a JSON body never counts more than its own bytes."""
    size = _size(document)
    frames: list[tuple[str, Iterator[tuple[str, int, Any]]]] = []
    if isinstance(document, dict | list):
        frames.append(("", _children(document)))
    while frames:
        for key, overhead, value in frames[-1][1]:
            size += _size(value) + overhead
            if size > limits.max_expanded_bytes:
                raise DocumentRefused(
                    413,
                    f"the document is over the limit of {limits.max_expanded_bytes} bytes once its YAML aliases "
                    "are written out (api.maxExpandedBytes): write it without aliases, or send less",
                )
            if isinstance(value, dict | list):
                if len(frames) >= limits.max_depth:
                    raise _too_deep(limits, _path([*(name for name, _ in frames[1:]), key]))
                frames.append((key, _children(value)))
                break
        else:
            frames.pop()


def _check_brackets(text: bytes, limits: DocumentLimits) -> None:
    """Refuse brackets nested deeper than the limit, or more unclosed ones than that (a YAML plain scalar may
    hold a few; PyYAML nests every one that is not closed)."""
    brackets = text.translate(_SQUARE, _NOT_BRACKETS)
    for _ in range(limits.max_depth):
        if b"[]" not in brackets:
            break
        brackets = brackets.replace(b"[]", b"")  # one level less everywhere at once
    if b"[]" in brackets or brackets.count(b"[") > limits.max_depth:
        raise _too_deep(limits, "body")


def _children(value: dict[Any, Any] | list[Any]) -> Iterator[tuple[str, int, Any]]:
    """Each item with its name in a field path and what it adds as JSON besides its value and a comma: a
    member's quoted key and colon."""
    if isinstance(value, dict):
        return ((name, len(name) + 3, item) for name, item in ((str(key), item) for key, item in value.items()))
    return ((f"[{index}]", 0, item) for index, item in enumerate(value))


def _size(value: Any) -> int:
    return len(value) + 2 if isinstance(value, str) else 2 if isinstance(value, dict | list) else 1


def _path(parts: list[str]) -> str:
    return "".join(part if part.startswith("[") or not index else f".{part}" for index, part in enumerate(parts))


def _too_deep(limits: DocumentLimits, field: str) -> DocumentRefused:
    return DocumentRefused(
        400, f"the document nests deeper than {limits.max_depth} levels (api.maxDepth) at {field}", field
    )
