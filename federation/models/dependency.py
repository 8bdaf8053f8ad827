"""A job's dependencies (Slurm's ``--dependency``): as a spec states them, and as a record keeps them.

A spec names what it waits for in ``spec.dependsOn``: a stored job (``job``: an id, an array's id
meaning every element), every element of an array (``array``), or another job of the same request
(``name``: its ``metadata.name``, so a bulk submit can state a whole DAG before it has ids). At
submit the API resolves each entry to ``Wait`` entries on ids (``JobRecord.after``), which is all
the scheduler reads: ``aftercorr`` becomes, for element i of an array, ``afterok`` on element i of
the other array.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Condition = Literal["afterok", "afternotok", "afterany", "aftercorr"]
WaitCondition = Literal["afterok", "afternotok", "afterany"]
MAX_DEPENDENCIES = 64


class Dependency(BaseModel):
    """One entry of ``spec.dependsOn``: exactly one of ``job``, ``array`` or ``name``."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    job: str | None = Field(None, min_length=1, max_length=64)
    array: str | None = Field(None, min_length=1, max_length=64)
    name: str | None = Field(None, min_length=1, max_length=63)
    condition: Condition = "afterok"

    @model_validator(mode="after")
    def _one_target(self) -> Dependency:
        if sum(target is not None for target in (self.job, self.array, self.name)) != 1:
            raise ValueError(
                "name exactly one of job (a job id), array (an array's id: every element) or name "
                "(another job of this request, by metadata.name)"
            )
        return self


class Wait(BaseModel):
    """What a job waits for, on ids: the one job ``job`` (``count`` 0), or every element of the array
    ``job`` (``count`` N: ``job-0`` .. ``job-(N-1)``)."""

    model_config = ConfigDict(extra="ignore")

    job: str
    condition: WaitCondition = "afterok"
    count: int = Field(0, ge=0)

    def targets(self) -> list[str]:
        return [self.job] if not self.count else [f"{self.job}-{index}" for index in range(self.count)]

    def describe(self) -> str:
        what = f"job {self.job}" if not self.count else f"every element of array {self.job} ({self.count})"
        return f"{self.condition} on {what}"
