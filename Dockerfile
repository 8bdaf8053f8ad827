# The fedq image: `fedq agent` for configs/k8s/ (and `fedq server`, the same package). Build from the repository root:
#   docker build -t registry.example.org/fedq-agent:0.1.0 .
# then set that name and tag in configs/k8s/kustomization.yaml (docs/kubernetes.md). Not built here: the
# development machines have no container daemon; hadolint checks this file (tests/k8s/test_dockerfile.py).

# -- build: a virtualenv with fedq and its dependencies, compilers available -------------------------------
FROM python:3.12.8-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
RUN python -m venv /opt/venv
COPY pyproject.toml README.md ./
COPY federation ./federation
COPY member_agent ./member_agent
COPY policies ./policies
COPY configs ./configs
# Editable, so the package finds configs/ next to it (the agent's default scheduler conf) at /app, the path
# the runtime stage copies it to.
RUN /opt/venv/bin/pip install --editable .

# -- runtime: the virtualenv and the source only, as a non-root user ------------------------------------------
FROM python:3.12.8-slim-bookworm AS runtime
ENV PATH=/opt/venv/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
RUN groupadd --gid 65532 fedq && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin fedq
COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app
WORKDIR /app
USER 65532:65532
ENTRYPOINT ["fedq"]
CMD ["agent", "--help"]
