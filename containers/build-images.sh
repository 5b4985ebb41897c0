#!/bin/sh
# Build the container e2e test's images without a registry (note 095):
#   localhost/trainop-debian-py:12   Debian bookworm minbase + python3 (mmdebstrap, imported)
#   localhost/trainop-ddp:1          + CPU torch (from this machine's wheel directories) and
#                                    /opt/train/ddp.py and tfconfig.py; no ENTRYPOINT
#   localhost/trainop-ddp-entry:1    the same with ENTRYPOINT ["python3", "/opt/train/ddp.py"]
#   localhost/trainop-dgl:1          trainop-ddp:1 + dgl==1.1.3 and examples/dgl under
#                                    /opt/trainop (WORKDIR): the DGLJob example's two workers
#   localhost/trainop-debian-mpi:12  Debian bookworm minbase + python3, Open MPI, mpi4py
#   localhost/trainop-mpi:1          + examples/mpi/allreduce.py under /opt/trainop (WORKDIR)
#   localhost/trainop-debian-mpi-ssh:12  the MPI base + openssh-server and openssh-client
#   localhost/trainop-mpi-ssh:1      + host keys, sshd and ssh client settings, /run/sshd and
#                                    /opt/trainop/allreduce.py (MPIJob v2beta1 over real SSH)
# Where docker works (`docker info` answers: make docker-env) each image is then loaded into
# docker too (podman save | docker load), only where docker lacks it or has another image id
# under its name (docker keeps podman's id: sha256:<id>), for --runtime docker.
# Skips (exit 0, a message) when podman or mmdebstrap is missing. STATE: a scratch directory.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
state=${STATE:-${TMPDIR:-/tmp}/trainop-container-images}
if ! command -v podman >/dev/null 2>&1 || ! command -v mmdebstrap >/dev/null 2>&1; then
    echo "container-images: podman or mmdebstrap missing (make container-env): skipped"
    exit 0
fi
mkdir -p "$state"
printf '[containers]\ndefault_ulimits = []\n' > "$state/containers.conf"
export CONTAINERS_CONF="$state/containers.conf"
podman="podman --runtime runc --cgroup-manager cgroupfs"
if ! $podman image exists localhost/trainop-debian-py:12; then
    mmdebstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
        bookworm "$state/rootfs.tar"
    $podman import "$state/rootfs.tar" localhost/trainop-debian-py:12
    rm -f "$state/rootfs.tar"
fi
mounts=""
for dir in /opt/wheels:/wheels /opt/pypi:/pypi /etc/ssl/certs/ca-certificates.crt:/host-ca.crt; do
    [ -e "${dir%%:*}" ] && mounts="$mounts -v $dir:ro"
done
# shellcheck disable=SC2086
$podman build --network host $mounts -t localhost/trainop-ddp:1 -f "$here/Containerfile.train" "$here"
$podman build -t localhost/trainop-ddp-entry:1 -f "$here/Containerfile.entrypoint" "$here"
if ! $podman image exists localhost/trainop-debian-mpi:12; then
    mmdebstrap --variant=minbase --include=python3,openmpi-bin,python3-mpi4py \
        bookworm "$state/rootfs-mpi.tar"
    $podman import "$state/rootfs-mpi.tar" localhost/trainop-debian-mpi:12
    rm -f "$state/rootfs-mpi.tar"
fi
$podman build -t localhost/trainop-mpi:1 -f "$here/Containerfile.mpi" "$here/../examples/mpi"
if ! $podman image exists localhost/trainop-debian-mpi-ssh:12; then
    mmdebstrap --variant=minbase \
        --include=python3,openmpi-bin,python3-mpi4py,openssh-server,openssh-client \
        bookworm "$state/rootfs-mpi-ssh.tar"
    $podman import "$state/rootfs-mpi-ssh.tar" localhost/trainop-debian-mpi-ssh:12
    rm -f "$state/rootfs-mpi-ssh.tar"
fi
$podman build -t localhost/trainop-mpi-ssh:1 -f "$here/Containerfile.mpi-ssh" "$here/../examples/mpi"
# Last, so that a failed DGL install leaves the other images built.
# shellcheck disable=SC2086
$podman build --network host $mounts -t localhost/trainop-dgl:1 -f "$here/Containerfile.dgl" \
    "$here/../examples/dgl"
echo "container-images: built localhost/trainop-ddp:1, trainop-ddp-entry:1, trainop-dgl:1," \
    "trainop-mpi:1 and trainop-mpi-ssh:1"
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
    echo "container-images: docker does not work here (make docker-env): not loaded into docker"
    exit 0
fi
for image in localhost/trainop-debian-py:12 localhost/trainop-ddp:1 localhost/trainop-ddp-entry:1 \
    localhost/trainop-dgl:1 localhost/trainop-mpi:1 localhost/trainop-mpi-ssh:1; do
    id=$($podman image inspect --format '{{.Id}}' "$image")
    if [ "$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null)" != "sha256:$id" ]; then
        $podman save "$image" | docker load
    fi
done
echo "container-images: docker has them too"
