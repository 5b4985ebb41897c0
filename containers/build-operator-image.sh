#!/bin/sh
# Build the operator image from the repository's Dockerfile without a registry (issue 25, note 020):
#   localhost/trainop-python:3.11  Debian bookworm minbase + python3 (3.11), a venv at /opt/venv
#                                  first on PATH (pip; Debian's own pip refuses system installs),
#                                  ca-certificates and passwd (useradd); mmdebstrap, imported;
#                                  built only when missing
#   localhost/trainop:VERSION      `podman build --build-arg BASE=<that>` of ./Dockerfile, the tag
#                                  the manifests pin (manifests/overlays/standalone: trainop:VERSION)
# The Dockerfile's `pip install .` reaches the package index as pip does on this machine: this
# machine's pip configuration (pip config list: files and PIP_* environment) is written to one
# file mounted at /etc/pip.conf for the build, with every path it names (CA bundle, constraints,
# find-links and file:// indexes) mounted read-only; --network host, no other network. Build
# mounts leave nothing in the image. Skips (exit 0, a message) when podman or mmdebstrap is
# missing. STATE: a scratch directory. PYTHON: the host's Python (for pip's configuration).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
state=${STATE:-${TMPDIR:-/tmp}/trainop-operator-image}
python=${PYTHON:-python3}
if ! command -v podman >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1; then
    echo "operator-image: podman or mmdebstrap missing (make container-env): skipped"
    exit 0
fi
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml")
base=localhost/trainop-python:3.11
image=localhost/trainop:$version
mkdir -p "$state"
printf '[containers]\ndefault_ulimits = []\n' > "$state/containers.conf"
export CONTAINERS_CONF="$state/containers.conf"
podman="podman --runtime runc --cgroup-manager cgroupfs"
if ! $podman image exists "$base"; then
    mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates,passwd \
        --customize-hook='chroot "$1" python3 -m venv /opt/venv' \
        bookworm "$state/rootfs-python.tar"
    $podman import \
        --change 'ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["python3"]' \
        "$state/rootfs-python.tar" "$base"
    rm -f "$state/rootfs-python.tar"
fi
mounts=$("$python" "$here/pip-build-config.py" "$state/pip.conf")
previous=$($podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
# shellcheck disable=SC2086
$podman build --network host $mounts --build-arg "BASE=$base" -t "$image" -f "$root/Dockerfile" "$root"
# The image this build replaced, now untagged, goes (unless a container still uses it).
if [ -n "$previous" ] && [ "$previous" != "$($podman image inspect --format '{{.Id}}' "$image")" ]; then
    $podman rmi "$previous" >/dev/null 2>&1 || true
fi
echo "operator-image: built $image (base $base)"
