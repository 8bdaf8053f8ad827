"""Slurm batch scripts and HTCondor submit descriptions as fedq jobs (issue 36): each directive's
mapping by the formats the sbatch man page (https://slurm.schedmd.com/sbatch.html: --time's six forms,
--mem in MB unless K/M/G/T) and the condor_submit manual (request_memory in MiB unless K/M/G/T) give;
and a refusal naming its line for what has no fedq meaning."""

from __future__ import annotations

from pathlib import Path

import pytest

from federation.models.job import JobManifest
from federation.submitfiles import Refused, kind_of, mebibytes, read
from federation.submitfiles.slurm import array, dependencies, duration

EXAMPLES = Path(__file__).resolve().parents[2] / "configs" / "examples"


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30", 30 * 60),  # minutes
        ("30:15", 30 * 60 + 15),  # minutes:seconds
        ("4:30:15", (4 * 60 + 30) * 60 + 15),  # hours:minutes:seconds
        ("2-12", (2 * 24 + 12) * 3600),  # days-hours
        ("2-12:30", ((2 * 24 + 12) * 60 + 30) * 60),  # days-hours:minutes
        ("2-02:30:05", ((2 * 24 + 2) * 60 + 30) * 60 + 5),  # days-hours:minutes:seconds
        ("0", None),  # "A time limit of zero requests that no time limit be imposed"
        ("UNLIMITED", None),
    ],
)
def test_slurm_times_in_every_sbatch_format(text: str, seconds: int | None) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["1h", "1:2:3:4", "-5", "2-", ""])
def test_a_time_sbatch_would_refuse_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Slurm time"):
        duration(text)


@pytest.mark.parametrize(
    ("text", "mib"), [("512", 512), ("4G", 4096), ("4g", 4096), ("1T", 1024**2), ("2048K", 2), ("2GB", 2048)]
)
def test_memory_sizes_are_mebibytes_by_default(text: str, mib: float) -> None:
    assert mebibytes(text) == mib


def test_arrays_from_zero_with_a_throttle() -> None:
    assert array("0-99%10") == {"count": 100, "parallelism": 10}
    assert array("0-7") == {"count": 8}
    assert array("0") == {"count": 1}
    with pytest.raises(ValueError, match="from 0.*write 0-9"):
        array("1-10")
    with pytest.raises(ValueError, match="index lists"):
        array("0,3,7")
    with pytest.raises(ValueError, match="index lists"):
        array("0-15:4")


def test_dependencies_map_to_depends_on() -> None:
    assert dependencies("afterok:a1:b2,afterany:c3") == [
        {"job": "a1", "condition": "afterok"},
        {"job": "b2", "condition": "afterok"},
        {"job": "c3", "condition": "afterany"},
    ]
    with pytest.raises(ValueError, match="waits for all"):
        dependencies("afterok:a1?afterok:b2")
    with pytest.raises(ValueError, match="singleton"):
        dependencies("singleton")


SCRIPT = """#!/bin/bash
#SBATCH --job-name=train
#SBATCH -n 4 -c 2
#SBATCH --mem-per-cpu=1G   # per CPU: 2G a task
#SBATCH -t 1-00:30
#SBATCH --gpus-per-task=1
#SBATCH -p research.vision
#SBATCH --array=0-19%4
#SBATCH --dependency=afterok:000abc
#SBATCH -H
#SBATCH -o train.out
python3 train.py
#SBATCH --exclusive
"""


def test_an_sbatch_script_becomes_a_valid_job_spec() -> None:
    submission = read("train.sh", SCRIPT, "slurm")
    spec = submission.manifest["spec"]
    assert submission.manifest["metadata"] == {"name": "train"}
    assert spec["queue"] == "research.vision"
    assert spec["walltime"] == (24 * 60 + 30) * 60
    assert spec["array"] == {"count": 20, "parallelism": 4}
    assert spec["dependsOn"] == [{"job": "000abc", "condition": "afterok"}]
    task = spec["tasks"][0]
    assert (task["replicas"], task["resources"]) == (4, {"cpu": 2, "memory": "2048Mi", "nvidia.com/gpu": 1})
    assert task["command"] == ["/bin/bash", "-c", SCRIPT]  # the whole script; #SBATCH lines are comments
    assert submission.hold
    assert submission.notes == [
        "train.sh:11: output is kept by fedq, not written to train.out: read it with `fedq logs ID`"
    ]
    assert JobManifest.model_validate(submission.manifest).spec.array.parallelism == 4  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("script", "line", "says"),
    [
        ("#!/bin/bash\n#SBATCH -p q\n\n#SBATCH --exclusive\necho", 4, "--exclusive cannot be mapped"),
        ("#!/bin/bash\n#SBATCH --nodes=2\n", 2, "--nodes=2 cannot be mapped"),
        ("#!/bin/bash\n#SBATCH -N 2\n", 2, "-N cannot be mapped"),
        ("#!/bin/bash\n#SBATCH -n 4\n#SBATCH --mem=8G\n", 3, "--mem is per node.*--mem-per-cpu"),
        ("#!/bin/bash\n#SBATCH -n 2\n#SBATCH --gres=gpu:2\n", 3, "--gres is per node.*--gpus-per-task"),
        ("#!/bin/bash\n#SBATCH --gres=gpu:a100:2\n", 2, "GPU type"),
        ("#!/bin/bash\n#SBATCH --time=1h\n", 2, "not a Slurm time"),
        ("#!/bin/bash\n#SBATCH --array=1-5\n", 2, "from 0"),
        ("#!/bin/bash\n#SBATCH --mem=0\n", 2, "all of a node"),
        ("#!/usr/bin/perl\n#SBATCH -n 1\n", 1, "first line must be #!"),
        ("echo no shebang\n", 1, "first line must be #!"),
    ],
)
def test_what_cannot_be_mapped_is_refused_with_its_line(script: str, line: int, says: str) -> None:
    with pytest.raises(Refused, match=f"^job.sh:{line}: .*{says}") as refused:
        read("job.sh", script, "slurm")
    print(refused.value)


CONDOR = """# a comment
universe = vanilla
Executable = /usr/bin/python3
arguments = "-c 'print(""hi"")' 'it''s'"
request_cpus = 2
request_memory = 2G
request_gpus = 1
accounting_group = prod.batch
log = job.log
queue 5
"""


def test_a_condor_submit_description_becomes_a_valid_job_spec() -> None:
    submission = read("analysis.sub", CONDOR, "condor")
    spec = submission.manifest["spec"]
    assert submission.manifest["metadata"] == {"name": "analysis"}
    assert spec["queue"] == "prod.batch"
    assert spec["array"] == {"count": 5}
    task = spec["tasks"][0]
    assert task["command"] == ["/usr/bin/python3", "-c", 'print("hi")', "it's"]
    assert task["resources"] == {"cpu": 2.0, "memory": "2048Mi", "nvidia.com/gpu": 1.0}
    assert submission.notes == ["analysis.sub:9: log is kept by fedq, not written to job.log: see `fedq logs ID`"]
    JobManifest.model_validate({**submission.manifest})


def test_condor_old_argument_syntax_and_memory_in_mib() -> None:
    text = "executable = /bin/echo\narguments = a  b\\\n c\nrequest_memory = 100\nqueue\n"
    spec = read("x.sub", text, "condor").manifest["spec"]
    assert spec["tasks"][0]["command"] == ["/bin/echo", "a", "b", "c"]
    assert spec["tasks"][0]["resources"] == {"memory": "100Mi"}
    assert "array" not in spec


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        ("executable = /bin/true\ntransfer_input_files = a\nqueue\n", 2, "transfer_input_files cannot be mapped"),
        ("executable = /bin/true\nuniverse = docker\nqueue\n", 2, "universe = docker: cannot be mapped"),
        ("executable = /bin/true\narguments = $(Process)\nqueue\n", 2, "macros"),
        ("executable = /bin/true\nrequest_cpus = 1+1\nqueue\n", 2, "not an expression"),
        ("executable = /bin/true\nqueue 3 from list.txt\n", 2, "queue N"),
        ("executable = /bin/true\nqueue\nqueue\n", 3, "second queue"),
        ("executable = /bin/true\n", 1, "no queue statement"),
    ],
)
def test_condor_commands_that_cannot_be_mapped_are_refused_with_their_line(text: str, line: int, says: str) -> None:
    with pytest.raises(Refused, match=f"^job.sub:{line}: .*{says}"):
        read("job.sub", text, "condor")


def test_the_format_is_told_by_extension_or_content() -> None:
    assert kind_of("job.yaml", "#!/bin/bash\n#SBATCH -n 1") == "yaml"
    assert kind_of("run", "#!/bin/bash\n#SBATCH -n 1\necho") == "slurm"
    assert kind_of("run.sh", "echo") == "slurm"
    assert kind_of("desc", "executable = /bin/true\nqueue\n") == "condor"
    assert kind_of("-", "apiVersion: fedq/v1\nkind: Job\n") == "yaml"


@pytest.mark.parametrize("name", ["sbatch-hello.sh", "sbatch-array.sh", "sbatch-tasks.sh", "condor-hello.sub"])
def test_the_examples_parse_to_valid_specs(name: str) -> None:
    path = EXAMPLES / name
    text = path.read_text()
    JobManifest.model_validate(read(str(path), text, kind_of(str(path), text)).manifest)
