"""A small synchronous Python client for the fedq REST API (what the CLI and the agents use)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


class FedqError(Exception):
    """The server refused a request, or could not be reached; ``status`` is 0 for the latter."""

    def __init__(self, status: int, message: str, fields: list[dict[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.fields = fields or []

    def __str__(self) -> str:
        lines = [f"{self.message} (HTTP {self.status})" if self.status else self.message]
        lines += [f"  {f['field']}: {f['message']}" for f in self.fields]
        return "\n".join(lines)


class FedqClient:
    def __init__(self, server: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.server = server.rstrip("/")
        self._http = httpx.Client(base_url=self.server, headers=headers, timeout=timeout)

    def __enter__(self) -> FedqClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def request(self, method: str, path: str, *, body: Any = None, params: dict[str, Any] | None = None) -> Any:
        content = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if content is not None else {}
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        try:
            response = self._http.request(method, path, content=content, params=clean, headers=headers)
        except httpx.HTTPError as exc:
            raise FedqError(0, f"cannot reach the fedq server at {self.server}: {exc}") from None
        if response.status_code >= 400:
            try:
                payload = response.json()
            except ValueError:
                payload = {"error": response.text or response.reason_phrase}
            raise FedqError(response.status_code, str(payload.get("error", payload)), payload.get("fields"))
        return response.json() if response.content else None

    def submit(
        self, spec: dict[str, Any], *, tenant: str | None = None, allow_unschedulable: bool = False
    ) -> dict[str, Any]:
        """``allow_unschedulable``: accept a job no joined cluster could run (for clusters yet to join)."""
        params = _submit_params(tenant, allow_unschedulable)
        result: dict[str, Any] = self.request("POST", "/v1/jobs", body=spec, params=params)
        return result

    def submit_many(
        self, specs: list[dict[str, Any]], *, tenant: str | None = None, allow_unschedulable: bool = False
    ) -> list[str]:
        params = _submit_params(tenant, allow_unschedulable)
        result = self.request("POST", "/v1/jobs", body={"jobs": specs}, params=params)
        return list(result["ids"])

    def jobs(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every job matching the filters, in the API's order (state, queue, id), following ``continue``
        until it is null: a page may be short, even empty, while more remain. Pages are read one by
        one, so a job that changes state meanwhile may come twice or not at all."""
        params = dict(filters)
        while True:
            page = self.request("GET", "/v1/jobs", params=params)
            yield from page["items"]
            if not page.get("continue"):
                return
            params["continue"] = page["continue"]

    def job(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", f"/v1/jobs/{job_id}")
        return result

    def cancel(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("DELETE", f"/v1/jobs/{job_id}")
        return result

    def queues(self) -> dict[str, Any]:
        result: dict[str, Any] = self.request("GET", "/v1/queues")
        return result

    def apply_queues(self, tree: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("PUT", "/v1/queues", body=tree)
        return result

    def create_tenant_token(self, tenant: str, ttl: str | None = None) -> str:
        body = {"ttl": ttl} if ttl else None
        return str(self.request("POST", f"/v1/tenants/{tenant}/tokens", body=body)["token"])

    def create_join_token(self, cluster: str, ttl: str | None = None) -> str:
        body = {"ttl": ttl} if ttl else None
        return str(self.request("POST", f"/v1/clusters/{cluster}/tokens", body=body)["token"])


def _submit_params(tenant: str | None, allow_unschedulable: bool) -> dict[str, Any]:
    return {"tenant": tenant, "allowUnschedulable": "true" if allow_unschedulable else None}
