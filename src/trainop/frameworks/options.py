"""Operator-wide settings that some framework plugins read (upstream's command-line flags).

``FrameworkOptions`` is how the mode reaches a plugin, as data: a cluster's operator takes the
defaults and its flags; a local session (``local.session``) turns off what only a cluster needs
(peer DNS waits, kubectl delivery, init containers whose images cannot run locally) and names
its own exec and ssh clients. The default init-container templates of PyTorch and DGL live here
beside the options that carry them. Pure data: no I/O. Neighbours: ``base`` (the plugin
contract), the plugins that read these fields.
"""

from __future__ import annotations

from dataclasses import dataclass

# The init container of PyTorch workers, as upstream v1.9 renders it by default: the command
# string must stay identical (operators' admission policies and dashboards match on it).
DEFAULT_PYTORCH_INIT_CONTAINER_TEMPLATE = """
- name: init-pytorch
  image: {{.InitContainerImage}}
  imagePullPolicy: IfNotPresent
  resources:
    limits:
      cpu: 100m
      memory: 20Mi
    requests:
      cpu: 50m
      memory: 10Mi
  command: ['sh', '-c', 'err=1;for i in $(seq {{.MaxTries}}); do if nslookup {{.MasterAddr}}; \
then err=0 && break; fi;echo waiting for master; sleep 2; done; exit $err']"""


# The init containers of the Qihoo DGL operator's launcher (its images' protocol): kubectl put
# into ``/opt/kube``, then waits until the pods the ConfigMap's files name have finished
# (the partitioner, which copies the dataset in meanwhile) and are ready (the workers). The
# partitioner gets the first one only.
DEFAULT_DGL_INIT_CONTAINER_TEMPLATE = """
- name: kubectl-download
  image: {{.KubectlDownloadImage}}
  imagePullPolicy: Always
  volumeMounts: [{name: kube-volume, mountPath: /opt/kube}]
- name: watcher-loop-partitioner
  image: {{.WatcherLoopImage}}
  imagePullPolicy: Always
  env:
  - {name: NAMESPACE, value: {{.Namespace}}}
  - {name: WATCHERFILE, value: /etc/dgl/partfile}
  - {name: WATCHERMODE, value: finished}
  volumeMounts:
  - {name: config-volume, mountPath: /etc/dgl}
  - {name: dataset-volume, mountPath: /dgl_workspace/dataset}
  resources:
    limits: {cpu: 100m, memory: 512Mi, ephemeral-storage: 5Gi}
    requests: {cpu: 100m, memory: 512Mi, ephemeral-storage: 5Gi}
- name: watcher-loop-worker
  image: {{.WatcherLoopImage}}
  imagePullPolicy: Always
  env:
  - {name: NAMESPACE, value: {{.Namespace}}}
  - {name: WATCHERFILE, value: /etc/dgl/hostfile}
  - {name: WATCHERMODE, value: ready}
  volumeMounts: [{name: config-volume, mountPath: /etc/dgl}]
  resources:
    limits: {cpu: 100m, memory: 512Mi, ephemeral-storage: 5Gi}
    requests: {cpu: 100m, memory: 512Mi, ephemeral-storage: 5Gi}"""


@dataclass(frozen=True, slots=True)
class FrameworkOptions:
    """Operator-wide settings some plugins read (upstream command-line flags)."""

    # Cluster-only: init containers that wait until peers' DNS names resolve (PyTorch
    # workers). Local mode turns it off: loopback addresses need no waiting.
    wait_for_peer_dns: bool = True
    pytorch_init_container_image: str = "alpine:3.10"
    pytorch_init_container_max_tries: int = 100
    # Upstream's template (a YAML list of containers with ``{{.MasterAddr}}``,
    # ``{{.InitContainerImage}}`` and ``{{.MaxTries}}``), or the text of the file
    # ``--pytorch-init-container-template-file`` names.
    pytorch_init_container_template: str = DEFAULT_PYTORCH_INIT_CONTAINER_TEMPLATE
    mpi_kubectl_delivery_image: str = "kubeflow/kubectl-delivery:latest"
    # DGL: the init containers of the launcher and partitioner (a template as PyTorch's, with
    # ``{{.KubectlDownloadImage}}``, ``{{.WatcherLoopImage}}`` and ``{{.Namespace}}``) and the
    # images it names (the Qihoo operator's flags). Local mode: ``[]``, none (their images
    # cannot run there; ``ConfigFiles.waits_for`` orders the launcher after the workers).
    dgl_init_container_template: str = DEFAULT_DGL_INIT_CONTAINER_TEMPLATE
    dgl_kubectl_download_image: str = "dgloperator/kubectl-download:latest"
    dgl_watcher_loop_image: str = "dgloperator/watcher-loop:latest"
    # Prefix of the absolute paths a plugin writes into env values: empty on a cluster; in
    # local mode ``$(TRAINOP_ROOT)``, where the process kubelet materialises a container's
    # mountPaths (its processes see the host's filesystem; note 060).
    container_root: str = ""
    # The command a generated ``kubexec.sh`` (MPI's, DGL's) runs as ``<command> <pod>
    # [--container C] -- /bin/sh -c ...``: kubectl on a cluster; locally trainop's exec client.
    exec_command: str = "/opt/kube/kubectl exec"
    # Whether a running pod sees later changes of its generated files (``ConfigFiles``): a
    # cluster's kubelet refreshes configMap volumes; the local kubelets project them once, when
    # the pod starts, so there ``ConfigFiles.waits_for`` holds such pods back (note 004).
    pods_see_file_updates: bool = True
    # MPI (spec 7.5): whether the launcher gets the kubectl-delivery init container, and env
    # added to the launcher's first container (names the user sets win). Local mode: no
    # delivery, Open MPI over loopback.
    mpi_kubectl_delivery: bool = True
    mpi_launcher_env: tuple[tuple[str, str], ...] = ()
    # MPIJob v2beta1: the remote shell its launcher's MPI uses instead of the image's ssh
    # (empty: ssh, as on a cluster; local mode: ``cluster.kubelet.exec.sshclient``).
    mpi_ssh_command: str = ""
    # ... except for a job whose workers run sshd (``mpi_v2beta1.workers_run_sshd``): its
    # launcher keeps the image's ssh. True only where pods reach each other by name (a
    # container cluster on its own network), so a worker's sshd is reachable as on a cluster.
    mpi_real_ssh_to_sshd_workers: bool = False
