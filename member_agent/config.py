"""The agent's YAML config (``configs/agents/*.yaml``); command-line flags override it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from federation.config import load_yaml_file
from member_agent.backends import backend_name
from policies.units import parse_duration

DEFAULT_SIMULATED: dict[str, Any] = {"nodes": [{"count": 2, "resources": {"cpu": 4, "memory": "16Gi"}}]}


class AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = ""
    server: str = "http://127.0.0.1:8080"
    """The federation's API URL, or every replica's, comma-separated (``https://a:8443,https://b:8443``):
    reports go to the first that answers, so losing one replica loses no report (``FedqClient``)."""
    ca: str | None = None
    """The CA file that signed an https server's certificate (``--ca``, FEDQ_CA); None: the system's CAs."""
    cert: str | None = None
    """A client certificate, for a server that requires one (``--cert``, FEDQ_CERT), and its ``key``."""
    key: str | None = None
    backend: Annotated[str, AfterValidator(backend_name)] = "simulated"
    labels: dict[str, str] = Field(default_factory=dict)
    report_interval: float = Field(2.0, alias="reportInterval")
    credential_file: str = Field("", alias="credentialFile")
    credential_secret: str = Field("", alias="credentialSecret")
    """``NAMESPACE/NAME``: keep the credential in that Kubernetes Secret instead of a file (an agent in a pod)."""
    scheduler: str | None = None
    simulated: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_SIMULATED))
    """Passed to SimulatedBackend.from_config: ``{nodes: [{count, resources, labels}], defaultRuntime}``."""
    ray: dict[str, Any] = Field(default_factory=dict)
    """``{address: ...}``; no address starts or joins a local Ray."""
    kubernetes: dict[str, Any] = Field(default_factory=dict)
    """Passed to KubernetesBackend.from_config (namespace, kubeconfig, inCluster, ...)."""

    @field_validator("report_interval", mode="before")
    @classmethod
    def _interval(cls, value: Any) -> float:
        seconds = parse_duration(value)
        if not 0.05 <= seconds <= 60:
            raise ValueError("reportInterval must be between 50ms and 60s")
        return seconds

    @model_validator(mode="after")
    def _cert_with_key(self) -> AgentConfig:
        if bool(self.cert) != bool(self.key):
            raise ValueError("cert and key go together: a client certificate and its private key")
        if self.credential_file and self.credential_secret:
            raise ValueError("credentialFile and credentialSecret are exclusive: keep the credential in one place")
        return self

    def client_cert(self) -> tuple[str, str] | None:
        return (self.cert, self.key) if self.cert and self.key else None

    def credential_path(self) -> Path:
        if self.credential_file:
            return Path(self.credential_file).expanduser()
        return Path("~/.fedq/agents").expanduser() / f"{self.name}.json"


def load_agent_config(path: str | None) -> AgentConfig:
    if path is None:
        return AgentConfig()
    return AgentConfig.model_validate(load_yaml_file(path) or {})
