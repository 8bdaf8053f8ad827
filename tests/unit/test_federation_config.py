"""federation.yaml values that would make the scheduler misbehave are refused, naming the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from federation.config import FederationConfig


def errors_of(raw: dict[str, object]) -> list[tuple[tuple[int | str, ...], str]]:
    with pytest.raises(ValidationError) as info:
        FederationConfig.model_validate(raw)
    return [(err["loc"], err["msg"]) for err in info.value.errors()]


@pytest.mark.parametrize("weight", [-1, float("nan"), float("inf")])
def test_a_usage_weight_must_be_a_finite_non_negative_number(weight: float) -> None:
    found = errors_of({"fairshare": {"usageWeights": {"cpu": 1, "memory": weight}}})
    assert [loc for loc, _ in found] == [("fairshare", "usageWeights", "memory")]


def test_jobs_of_a_silent_cluster_are_requeued_only_once_it_counts_as_lost() -> None:
    [(loc, message)] = errors_of({"cluster": {"lostAfter": "60s", "requeueAfter": "10s"}})
    assert loc == ("cluster",)
    assert "requeueAfter (10s) must not be shorter than lostAfter (1m)" in message
    assert [loc for loc, _ in errors_of({"cluster": {"lostAfter": 0}})] == [("cluster", "lostAfter")]
    same = FederationConfig.model_validate({"cluster": {"lostAfter": "30s", "requeueAfter": "30s"}})
    assert (same.cluster.lost_after, same.cluster.requeue_after) == (30.0, 30.0)
    assert FederationConfig().fairshare.usage_weights == {"cpu": 1.0}


def test_retry_backoff_doubles_up_to_its_cap_and_bad_values_are_refused() -> None:
    jobs = FederationConfig.model_validate({"jobs": {"retryBackoff": "10s", "maxRetryBackoff": "30s"}}).jobs
    assert [jobs.backoff(retry) for retry in (1, 2, 3, 4)] == [10.0, 20.0, 30.0, 30.0]
    assert FederationConfig().jobs.max_retries == 3
    assert [loc for loc, _ in errors_of({"jobs": {"maxRetries": -1}})] == [("jobs", "maxRetries")]
    assert [loc for loc, _ in errors_of({"jobs": {"retryBackoff": "-5s"}})] == [("jobs", "retryBackoff")]


def test_sizes_take_quantities_and_quotas_override_the_default_field_by_field() -> None:
    config = FederationConfig.model_validate(
        {
            "api": {"maxRecordBytes": "128Ki"},
            "quotas": {"default": {"jobs": 10, "bytes": "1Mi"}, "tenants": {"a": {"jobs": 20}}},
        }
    )
    assert config.api.max_record_bytes == 128 * 1024
    assert (config.quotas.of("a").jobs, config.quotas.of("a").bytes, config.quotas.of("b").jobs) == (
        20,
        1024 * 1024,
        10,
    )
    assert [loc for loc, _ in errors_of({"api": {"maxRecordBytes": "2Mi"}})] == [("api", "maxRecordBytes")]
    assert [loc for loc, _ in errors_of({"store": {"budgetBytes": "0.5"}})] == [("store", "budgetBytes")]
    assert [loc for loc, _ in errors_of({"quotas": {"default": {"tasks": 0}}})] == [("quotas", "default", "tasks")]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"dispatchPerCycle": True}, ("dispatchPerCycle",)),
        ({"api": {"maxDepth": True}}, ("api", "maxDepth")),
        ({"api": {"pageSize": False}}, ("api", "pageSize")),
        ({"jobs": {"maxRetries": True}}, ("jobs", "maxRetries")),
        ({"cyclePeriod": "inf"}, ("cyclePeriod",)),
        ({"store": {"keepFinished": "40000d"}}, ("store", "keepFinished")),
        ({"fairshare": {"usageWeights": {"cpu": 1e300}}}, ("fairshare", "usageWeights", "cpu")),
    ],
)
def test_booleans_are_no_numbers_and_numbers_are_bounded(raw: dict[str, object], field: tuple[str, ...]) -> None:
    [(loc, _)] = errors_of(raw)
    assert loc[: len(field)] == field
