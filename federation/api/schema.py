"""Request bodies in the OpenAPI document. Handlers read their bodies themselves (JSON or YAML, within the
document limits), so FastAPI cannot see them: ``request_body`` declares one for a route, and ``DocumentedApp``
moves the models it refers to into the document's components."""

from __future__ import annotations

import copy
from typing import Any

from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from federation.api.deps import YAML_TYPES
from federation.models import JobManifest
from federation.models.cluster import ClusterGrant

_REF = "#/components/schemas/{model}-Input"


def request_body(annotation: Any, *, required: bool = True) -> dict[str, Any]:
    """A route's ``openapi_extra``: its body is ``annotation`` (a model, or a union of them), as JSON or YAML."""
    media = {"schema": TypeAdapter(annotation).json_schema(ref_template=_REF, mode="validation")}
    return {"requestBody": {"required": required, "content": {"application/json": media, YAML_TYPES[0]: media}}}


class DocumentedApp(FastAPI):
    def openapi(self) -> dict[str, Any]:
        """The document, built once, with each body's nested models under ``components.schemas``."""
        if self.openapi_schema is None:
            document = copy.deepcopy(super().openapi())  # the routes' openapi_extra is shared by every app
            components = document.setdefault("components", {}).setdefault("schemas", {})
            for operations in document["paths"].values():
                for operation in operations.values():
                    for media in operation.get("requestBody", {}).get("content", {}).values():
                        for name, definition in media["schema"].pop("$defs", {}).items():
                            components.setdefault(f"{name}-Input", definition)
            self.openapi_schema = document
        return self.openapi_schema


class JobBatch(BaseModel):
    """``POST /v1/jobs`` with several jobs: all are accepted or none."""

    model_config = ConfigDict(extra="forbid")

    jobs: list[JobManifest] = Field(min_length=1)


class TokenLifetime(BaseModel):
    """The optional body of ``POST /v1/tenants/{name}/tokens``: a ``ttl`` such as ``"7d"``."""

    model_config = ConfigDict(extra="forbid")

    ttl: str | float | None = None


class JoinTokenRequest(ClusterGrant):
    """The optional body of ``POST /v1/clusters/{name}/tokens``: a ``ttl``, and what the cluster may claim."""

    ttl: str | float | None = None
