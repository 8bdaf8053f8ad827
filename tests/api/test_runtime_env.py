"""``spec.runtimeEnv`` is checked at submit by Ray's own class and stored unchanged; a key outside Ray's
public fields or a value Ray refuses is a 422 naming the field, and nothing is written (issue 27)."""

from __future__ import annotations

import pytest

from tests.api.conftest import ApiFactory
from tests.api.support import job_spec
from tests.api.test_admission import accepted, refused

pytestmark = pytest.mark.etcd


async def test_a_typo_in_a_runtime_env_names_rays_field(api_on: ApiFactory) -> None:
    async with api_on() as api:
        field = await refused(api, job_spec(runtimeEnv={"env_var": {"A": "1"}}))
        assert field["field"] == "spec.runtimeEnv"
        assert (
            "unknown runtimeEnv field 'env_var'" in field["message"] and "did you mean 'env_vars'?" in field["message"]
        )


async def test_a_value_ray_refuses_is_refused_with_rays_reason(api_on: ApiFactory) -> None:
    async with api_on() as api:
        wrong_type = await refused(api, job_spec(runtimeEnv={"env_vars": {"A": 1}}))
        assert wrong_type["field"] == "spec.runtimeEnv" and "Dict[str, str]" in wrong_type["message"]
        both = await refused(api, job_spec(runtimeEnv={"pip": ["requests"], "conda": {"dependencies": []}}))
        assert "cannot be specified at the same time" in both["message"]


async def test_code_from_a_local_path_is_refused_with_where_to_put_it(api_on: ApiFactory) -> None:
    async with api_on() as api:
        local = await refused(api, job_spec(runtimeEnv={"working_dir": "./src"}))
        assert "path on the submitting machine" in local["message"] and "file:///shared/code.zip" in local["message"]
        modules = await refused(api, job_spec(runtimeEnv={"py_modules": ["s3://b/m.zip", "/home/me/lib"]}))
        assert "'/home/me/lib'" in modules["message"]


async def test_a_runtime_env_is_stored_as_given(api_on: ApiFactory) -> None:
    env = {"env_vars": {"A": "1"}, "pip": ["requests==2.32.3"], "working_dir": "s3://bucket/code.zip"}
    async with api_on() as api:
        await accepted(api, job_spec(runtimeEnv=env))
        [job] = (await api.http.get("/v1/jobs", headers=api.auth("alice"))).json()["items"]
        stored = (await api.http.get(f"/v1/jobs/{job['id']}", headers=api.auth("alice"))).json()
        assert stored["spec"]["runtimeEnv"] == env  # not Ray's normalised form (pip would become a dict)
