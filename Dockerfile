# The operator image: `docker build -t trainop:0.1.0 .` (manifests/overlays pin that tag).
# Every dependency is a pure-Python or manylinux wheel, so the slim base needs no compiler.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /build
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . && rm -rf /build

# A numeric user, so the pod's `runAsNonRoot: true` can verify it without /etc/passwd.
RUN useradd --uid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin trainop
USER 65532:65532
WORKDIR /

EXPOSE 8080 8081 9443
ENTRYPOINT ["trainop", "operator"]
