"""A small synchronous Python client for the fedq REST API (what the CLI and the agents use)."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpx

from federation.client_base import ApiClient, FedqError, Unreached, refusal

__all__ = ["FedqClient", "FedqError"]


class FedqClient(ApiClient):
    """The fedq API from Python, as the CLI uses it: ``with FedqClient(url, token, ca=...) as fedq:``.
    Results are the API's JSON (its OpenAPI document names each shape); ``submit`` answers one job as
    ``{"id"}``, an array as ``{"id", "ids"}``, exactly what ``fedq submit -o json`` prints for one file
    of one document. A refusal raises ``FedqError`` with the HTTP status and the fields it names.

    ``server`` may name several replicas, comma-separated, as ``ApiClient`` says: an agent naming them all
    keeps its lease through the loss of the one it was talking to (issue 33, point 7)."""

    def _start(self) -> None:
        self._replicas = [
            httpx.Client(
                base_url=url,
                headers=self._headers,
                timeout=self._timeout,
                verify=self._tls if self._tls is not None and url.startswith("https:") else False,
            )
            for url in self.servers
        ]
        self._http = self._replicas[0]

    def close(self) -> None:
        for replica in self._replicas:
            replica.close()

    def _send(
        self,
        method: str,
        path: str,
        content: bytes | None,
        params: dict[str, Any],
        headers: dict[str, str],
        timeout: float,
    ) -> tuple[int, str, bytes]:
        try:
            response = self._http.request(
                method, path, content=content, params=params, headers=headers, timeout=timeout
            )
        except httpx.HTTPError as exc:
            raise Unreached(exc, unsent=isinstance(exc, (httpx.ConnectError, httpx.ConnectTimeout))) from None
        return response.status_code, response.reason_phrase, response.content

    @contextlib.contextmanager
    def stream(self, path: str, params: dict[str, Any], read_timeout: float) -> Iterator[Iterator[str]]:
        """A streaming GET's lines, ``read_timeout`` the longest wait for the next byte; a refusal, a lost
        connection or that wait passing raises ``FedqError`` as ``request`` does (status 0: not reached)."""
        clean = {k: v for k, v in params.items() if v is not None}
        timeout = httpx.Timeout(self._timeout, read=read_timeout)
        try:
            with self._http.stream("GET", path, params=clean, timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    raise refusal(response.status_code, response.content, response.reason_phrase)
                yield response.iter_lines()
        except httpx.HTTPError as exc:
            raise self._unreachable(exc) from None

    def _unreachable(self, exc: Exception) -> FedqError:
        error = super()._unreachable(exc)
        self._http = self._replicas[self._current]
        return error

    def submit(
        self,
        spec: dict[str, Any],
        *,
        tenant: str | None = None,
        allow_unschedulable: bool = False,
        idempotency_key: str | None = None,
        hold: bool = False,
    ) -> dict[str, Any]:
        """``allow_unschedulable``: accept a job no joined cluster could run (for clusters yet to join).
        ``hold``: submit it held (it waits in line until ``release``).
        ``idempotency_key``: a new one per call by default; pass the same one again to retry a call whose
        answer was lost: the server answers the first result and creates nothing new."""
        params = _submit_params(tenant, allow_unschedulable, hold)
        headers = _idempotency(idempotency_key)
        result: dict[str, Any] = self.request("POST", "/v1/jobs", body=spec, params=params, headers=headers)
        return result

    def submit_many(
        self,
        specs: list[dict[str, Any]],
        *,
        tenant: str | None = None,
        allow_unschedulable: bool = False,
        idempotency_key: str | None = None,
        hold: bool = False,
    ) -> list[str]:
        """All of ``specs`` or none of them, however many txns they take (see ``submit`` for the key)."""
        params = _submit_params(tenant, allow_unschedulable, hold)
        headers = _idempotency(idempotency_key)
        result = self.request("POST", "/v1/jobs", body={"jobs": specs}, params=params, headers=headers)
        return list(result["ids"])

    def events(self, job_id: str, *, since: int | None = None) -> Iterator[dict[str, Any]]:
        """The job's history, then each transition as it happens (``revision``: the store revision that
        carried it; ``state``: the job's state after it), across reconnects and server restarts, each once
        (``since``: resume after that revision instead). Ends when the job's record is removed."""
        from federation.follow import job_events  # it builds on this module

        return job_events(self, job_id, since=since)

    async def aevents(self, job_id: str, *, since: int | None = None) -> AsyncIterator[dict[str, Any]]:
        """``events`` as an async iterator (each read in a worker thread)."""
        from federation.follow import in_thread

        async for event in in_thread(self.events(job_id, since=since)):
            yield event

    def watch_jobs(self, **filters: Any) -> Iterator[dict[str, Any]]:
        """A listing's changes as they happen (filters as ``jobs``): first ``{"revision"}`` (what it follows
        from; list the jobs after it to start from a full picture), then ``{"revision", "changes": [{"type":
        "put"|"delete", "job": summary}]}`` for each revision that changed it."""
        from federation.follow import listing_changes

        return (message.data for message in listing_changes(self, **filters))

    def wait(self, ids: Iterable[str], timeout: float | None = None, *, tenant: str | None = None) -> dict[str, str]:
        """Block until every job of ``ids`` has ended; answers each one's end state. ``TimeoutError`` past
        ``timeout`` seconds; ``tenant``: an admin waiting on one tenant's jobs (fewer changes to read)."""
        from federation.follow import wait

        return wait(self, ids, timeout, tenant=tenant)

    def logs(  # the base's arguments, and ``follow``
        self,
        job_id: str,
        *,
        task: str | None = None,
        stream: str | None = None,
        tail: int | None = None,
        since: float | None = None,
        epoch: int | None = None,
        follow: bool = False,
    ) -> Iterator[dict[str, Any]]:
        """As ``ApiClient.logs``; ``follow``: then each new line as it comes (across reconnects, each
        once), until the job has ended and its output is complete."""
        if not follow:
            return super().logs(job_id, task=task, stream=stream, tail=tail, since=since, epoch=epoch)
        from federation.follow import job_logs

        params = {"task": task, "stream": stream, "tail": tail, "since_seconds": since, "epoch": epoch}
        return job_logs(self, job_id, params)

    def cancel(self, job_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("DELETE", f"/v1/jobs/{job_id}")
        return result

    def act(self, job_id: str, action: str) -> dict[str, Any]:
        """``hold``, ``release`` or ``requeue`` one job: its state and reason after, and whether it changed."""
        result: dict[str, Any] = self.request("POST", f"/v1/jobs/{job_id}/{action}")
        return result

    def update(self, job_id: str, **changes: Any) -> dict[str, Any]:
        """Change a queued job's ``priority``, ``queue`` or ``walltime`` (checked as a submit is)."""
        result: dict[str, Any] = self.request("PATCH", f"/v1/jobs/{job_id}", body=changes)
        return result

    def act_on_many(self, action: str, **selector: Any) -> dict[str, Any]:
        """``cancel``, ``hold``, ``release`` or ``requeue`` the jobs of ``ids``, an ``array``, or of
        ``state``/``queue``/``tenant``: how many matched, changed, were already so, and were refused."""
        body = {key: value for key, value in selector.items() if value is not None}
        result: dict[str, Any] = self.request("POST", "/v1/jobs/actions", body={"action": action, **body})
        return result

    def apply_queues(self, tree: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("PUT", "/v1/queues", body=tree)
        return result

    def new_token(
        self, kind: str, name: str, ttl: str | None = None, grant: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """A ``tenant``, ``cluster`` (one-time join), ``admin`` or ``metrics`` token for ``name``: its id,
        expiry and the token itself, shown this once. A join token's ``grant`` bounds the cluster's
        ``labels`` and the ``capacity`` its reports may claim."""
        body: dict[str, Any] = {"ttl": ttl} if ttl else {}
        if grant:
            body.update(grant)
        if kind == "tenant":
            path = f"/v1/tenants/{name}/tokens"
        elif kind == "cluster":
            path = f"/v1/clusters/{name}/tokens"
        else:
            path, body = "/v1/tokens", {**body, "kind": kind, "name": name}
        result: dict[str, Any] = self.request("POST", path, body=body or None)
        return result

    def create_tenant_token(self, tenant: str, ttl: str | None = None) -> str:
        return str(self.new_token("tenant", tenant, ttl)["token"])

    def create_join_token(self, cluster: str, ttl: str | None = None, **grant: Any) -> str:
        """``grant``: ``labels={...}`` the cluster may join with, ``capacity={...}`` its reports may claim."""
        return str(self.new_token("cluster", cluster, ttl, grant)["token"])

    def tokens(self, *, kind: str | None = None, name: str | None = None) -> list[dict[str, Any]]:
        return list(self.request("GET", "/v1/tokens", params={"kind": kind, "name": name})["items"])

    def revoke_token(self, token_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.request("DELETE", f"/v1/tokens/{token_id}")
        return result


def _idempotency(key: str | None) -> dict[str, str]:
    return {"Idempotency-Key": key or str(uuid.uuid4())}


def _submit_params(tenant: str | None, allow_unschedulable: bool, hold: bool) -> dict[str, Any]:
    return {"tenant": tenant, "allowUnschedulable": "true" if allow_unschedulable else None, "hold": hold or None}
