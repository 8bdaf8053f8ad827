"""An array's throttle (``spec.array.parallelism``, Slurm's ``--array=0-19%4``) through ``fedq simulate``:
the production turn holds the elements to it, so the simulator does with no rule of its own.

Hand-worked (configs/scenarios/array-throttle.yaml): 20 elements of 10 s on 20 free cpus, throttle 4.
Slurm's rule (sbatch ``--array``: "a maximum number of simultaneously running tasks from the job array
may be specified using a '%' separator") gives 4 at a time: starts 0,0,0,0,10,...,40, lowest index first.
"""

from __future__ import annotations

from pathlib import Path

from sim_cli import SCENARIOS, simulate_scenario, starts

from federation.lifecycle import ON_CLUSTER, Event, Outcome
from federation.simulator.engine import Engine
from federation.simulator.records import JobProgress
from federation.simulator.scenario import load_scenario

LIMIT = 4


class Watched(Engine):
    """The engine, checked after every lifecycle event it lands: elements on clusters at that moment."""

    most = 0

    def _land(self, job: JobProgress, event: Event) -> Outcome | None:
        outcome = super()._land(job, event)
        on_cluster = sum(1 for j in self.jobs.values() if not j.state and j.record.state in ON_CLUSTER)
        self.most = max(self.most, on_cluster)
        assert on_cluster <= LIMIT, f"{on_cluster} elements on clusters at t={self.clock.now()} after {event}"
        return outcome


def test_never_more_than_four_elements_at_once() -> None:
    engine = Watched(load_scenario(SCENARIOS / "array-throttle.yaml"))
    result = engine.run()
    states = {record.state for record in result.records}
    print(f"most elements on clusters at once: {engine.most}; end states: {sorted(states)} of {len(result.records)}")
    assert engine.most == LIMIT, engine.most
    assert states == {"Succeeded"} and len(result.records) == 20, states


def test_elements_start_four_at_a_time_lowest_index_first(tmp_path: Path) -> None:
    rows = simulate_scenario("array-throttle", tmp_path)
    got = {job: start for job, start in starts(rows).items()}
    expected = {f"sweep-{i}": float(10 * (i // LIMIT)) for i in range(20)}
    print(f"starts: {got}")
    assert got == expected
