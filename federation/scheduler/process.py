"""Where ``fedq server`` runs the global scheduler: in a child process beside the API, or (for the
embedded memory store) as a task on the API's own loop.

A cycle over 10,000 pending jobs holds its event loop for a few hundred milliseconds. On the API's
loop that was every request's tail (a single submit waited up to a second) and API work could delay
the leader's lease keepalive. A thread would still share the interpreter lock (submits took three
times as long while cycles ran); a process has its own, its own etcd connection, and the machine's
other core. The API asks it, over a pipe, whether it leads and for its metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any

import structlog
from prometheus_client import generate_latest

from federation.config import FederationConfig
from federation.parent_death import die_with_parent
from federation.scheduler.metrics import SchedulerMetrics
from federation.scheduler.service import SchedulerService
from federation.store import EtcdConnection, Store, open_store
from policies.clock import Clock, SystemClock

log = structlog.get_logger("fedq.scheduler")

ANSWER_WITHIN = 5.0  # seconds the API waits for the scheduler's answer before calling it absent


@dataclass(frozen=True, slots=True)
class SchedulerStatus:
    leads: bool
    metrics: bytes  # the scheduler's series, Prometheus text; empty unless asked for
    health: dict[str, Any] | None  # its loop's (``LoopHealth.view``); None: it did not answer


class SchedulerTask:
    """The scheduler as a task on the caller's loop: the embedded memory store lives on that loop and
    is shared with the API (there is no second connection to open)."""

    def __init__(self, store: Store, config: FederationConfig, clock: Clock) -> None:
        self.metrics = SchedulerMetrics()
        self.service = SchedulerService(store, config, clock, metrics=self.metrics)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self.service.run(self._stop))

    async def status(self, metrics: bool = False) -> SchedulerStatus:
        """Whether it leads and, with ``metrics``, its series (a health check needs only the first)."""
        text = generate_latest(self.metrics.registry) if metrics else b""
        return SchedulerStatus(self.service.election.is_leader, text, self.service.health.view())

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


class SchedulerProcess:
    """The scheduler in a child process that dies with this one (a killed server must not leave a
    leader behind) and resigns when ``stop()`` asks."""

    def __init__(self, connection: EtcdConnection, prefix: str, config: FederationConfig) -> None:
        context = multiprocessing.get_context("spawn")  # the parent has gRPC threads: never fork it
        self._stop = context.Event()
        self._pipe, child_end = context.Pipe()
        self._lock = threading.Lock()
        self._process = context.Process(
            target=run_child,
            args=(connection, prefix, config, self._stop, child_end, os.getpid()),
            name="fedq-scheduler",
            daemon=True,
        )

    def start(self) -> None:
        self._process.start()

    async def status(self, metrics: bool = False) -> SchedulerStatus:
        """Whether it leads and, with ``metrics``, its series (a health check needs only the first)."""
        return await asyncio.to_thread(self._ask, metrics)

    def _ask(self, metrics: bool) -> SchedulerStatus:
        with self._lock:
            try:
                while self._pipe.poll():  # a late answer to a question that timed out
                    self._pipe.recv()
                self._pipe.send(metrics)
                if self._pipe.poll(ANSWER_WITHIN):
                    leads, text, health = self._pipe.recv()
                    return SchedulerStatus(leads, text, health)
            except (EOFError, OSError):
                pass
            return SchedulerStatus(False, b"", None)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.to_thread(self._process.join, 10.0)
        if self._process.is_alive():
            log.warning("scheduler did not stop within 10 s; terminating it")
            self._process.terminate()
            await asyncio.to_thread(self._process.join)


def scheduler_runner(
    target: str | EtcdConnection, prefix: str, store: Store, config: FederationConfig, clock: Clock
) -> SchedulerTask | SchedulerProcess:
    if isinstance(target, EtcdConnection):
        return SchedulerProcess(target, prefix, config)
    return SchedulerTask(store, config, clock)


# ---- the child ---------------------------------------------------------------------------------


def run_child(
    connection: EtcdConnection,
    prefix: str,
    config: FederationConfig,
    stop: ProcessEvent,
    pipe: Connection,
    parent: int,
) -> None:
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C reaches the server, which stops us
    asyncio.run(_schedule(connection, prefix, config, stop, pipe))


async def _schedule(
    connection: EtcdConnection, prefix: str, config: FederationConfig, stop: ProcessEvent, pipe: Connection
) -> None:
    clock = SystemClock()
    metrics = SchedulerMetrics()
    store = open_store(connection, prefix=prefix, clock=clock)
    service = SchedulerService(store, config, clock, metrics=metrics)
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()

    def wait_for_stop() -> None:
        stop.wait()
        loop.call_soon_threadsafe(stopping.set)

    def answer() -> None:
        with contextlib.suppress(EOFError, OSError):
            while True:
                wanted = pipe.recv()
                text = generate_latest(metrics.registry) if wanted else b""
                pipe.send((service.election.is_leader, text, service.health.view()))

    threading.Thread(target=wait_for_stop, name="fedq-scheduler-stop", daemon=True).start()
    threading.Thread(target=answer, name="fedq-scheduler-answer", daemon=True).start()
    try:
        await service.run(stopping)
    finally:
        await store.close()
