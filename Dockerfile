# The operator image: `docker build -t trainop:0.1.0 .` (manifests/overlays pin that tag).
# Every dependency is a pure-Python or manylinux wheel, so the slim base needs no compiler.
# BASE: any Python 3.11 image with `python3`, `pip` and `useradd` on its PATH; `make operator-image`
# passes one it makes locally (containers/build-operator-image.sh), where no registry is reachable.
ARG BASE=python:3.11-slim
FROM ${BASE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /build
# The dependencies in a layer of their own, so a change under src/ reinstalls only trainop.
COPY pyproject.toml README.md ./
# (each requirement one argument: a marker such as uvloop's has spaces in it)
RUN python3 -c 'import subprocess, sys, tomllib; deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]; subprocess.run([sys.executable, "-m", "pip", "install", *deps], check=True)'
COPY src ./src
RUN pip install . && rm -rf /build

# A numeric user, so the pod's `runAsNonRoot: true` can verify it without /etc/passwd.
RUN useradd --uid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin trainop
USER 65532:65532
WORKDIR /

EXPOSE 8080 8081 9443
ENTRYPOINT ["trainop", "operator"]
