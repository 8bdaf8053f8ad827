"""The report side of job logs: take the chunks an agent's report carries, within the limits.

A chunk is written only for a run its cluster holds (the job's current run on that cluster, or an
earlier one its history says ran there), so a cluster cannot write into another tenant's job. Each
report takes at most ``maxBytesPerReport``, each cluster and each job what its bucket has left; what
is not taken is acked short, and the agent sends it again with a later report.
"""

from __future__ import annotations

import asyncio

from federation import keys
from federation.config import LogsConfig
from federation.joblogs.rate import Buckets
from federation.joblogs.store import LogStore
from federation.models import JobRecord
from federation.models.logs import LogAck, LogChunk, LogLimits
from federation.store import Store, get_many
from policies.clock import Clock


def ran_there(record: JobRecord, cluster: str, epoch: int) -> bool:
    if record.cluster == cluster and record.epoch == epoch:
        return True
    return any(event.cluster == cluster and event.epoch == epoch for event in record.events)


class LogIntake:
    def __init__(self, store: Store, logs: LogStore, config: LogsConfig, clock: Clock) -> None:
        self.store = store
        self.logs = logs
        self.config = config
        self.clock = clock
        self.limits = LogLimits(
            max_bytes_per_job=config.max_bytes_per_job, max_bytes_per_report=config.max_bytes_per_report
        )
        self._clusters = Buckets(config.cluster_bytes_per_second)
        self._jobs = Buckets(config.job_bytes_per_second)

    async def take(self, cluster: str, chunks: list[LogChunk]) -> list[LogAck]:
        if not chunks:
            return []
        ids = sorted({chunk.job_id for chunk in chunks})
        found = await get_many(self.store, [keys.job(job_id) for job_id in ids])
        records = {job_id: JobRecord.from_bytes(kv.value) for job_id, kv in zip(ids, found, strict=True) if kv}
        return await asyncio.to_thread(self._write, cluster, chunks, records)

    def _write(self, cluster: str, chunks: list[LogChunk], records: dict[str, JobRecord]) -> list[LogAck]:
        now = self.clock.now()
        report_left = self.config.max_bytes_per_report
        acks = []
        with self.logs.writing() as write:
            for chunk in chunks:
                record = records.get(chunk.job_id)
                if record is None or not ran_there(record, cluster, chunk.epoch):
                    refused = LogAck(
                        job_id=chunk.job_id, epoch=chunk.epoch, task=chunk.task, stream=chunk.stream, next=0, more=False
                    )
                    acks.append(refused)
                    continue
                allowance = min(report_left, self._clusters.left(cluster, now), self._jobs.left(chunk.job_id, now))
                ack, used = write(chunk, max(allowance, 0))
                report_left -= used
                self._clusters.spend(cluster, used, now)
                self._jobs.spend(chunk.job_id, used, now)
                acks.append(ack)
        self._jobs.forget_full(now)
        return acks
