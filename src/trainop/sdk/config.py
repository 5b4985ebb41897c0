"""Which cluster the SDK talks to: the kubeconfig file, the context and the default namespace.

Order for the kubeconfig, first match wins:

1. ``config_file`` given to ``TrainingClient`` (``--kubeconfig`` in the CLI);
2. ``$KUBECONFIG`` (lightkube reads it; the first file of a list);
3. the ``trainop local up`` cluster's kubeconfig, when that cluster runs
   (``local.daemon.default_state_dir()/kubeconfig``);
4. ``~/.kube/config``, else the in-cluster service account.

The default namespace is the chosen context's namespace (the service account's in a pod),
falling back to ``default``. A missing or unreadable configuration is an ``UnreachableError``,
the same error as a server that does not answer.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import yaml
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ConfigError

from trainop import errors
from trainop.cluster.apiserver.http import auth
from trainop.local import daemon
from trainop.sdk import constants


@dataclass(frozen=True, slots=True)
class Target:
    """A resolved cluster: kubeconfig path (None: environment/in-cluster), context, namespace."""

    path: str | None
    context: str | None
    namespace: str
    # A trainop local cluster: its pods are processes of this host (see ``builders``).
    is_local: bool = False


def kubeconfig_path(config_file: str | None) -> str | None:
    """The kubeconfig file to load (None: lightkube's own environment/in-cluster lookup)."""
    if config_file:
        return str(config_file)
    if os.environ.get("KUBECONFIG"):
        return None
    local = daemon.status(daemon.default_state_dir())
    if local.running and local.kubeconfig.exists():
        return str(local.kubeconfig)
    return None


def resolve(config_file: str | None, context: str | None) -> Target:
    """The kubeconfig, context and default namespace for these arguments."""
    path = kubeconfig_path(config_file)
    try:
        loaded = KubeConfig.from_file(path) if path else KubeConfig.from_env()
        single = loaded.get(context_name=context)
    except (ConfigError, OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        raise errors.UnreachableError(f"cannot load Kubernetes configuration: {exc}") from exc
    if single is None:
        raise errors.UnreachableError(f"no Kubernetes context {context!r} in the configuration")
    namespace = single.namespace or constants.DEFAULT_NAMESPACE
    is_local = single.context_name == auth.CONTEXT
    return Target(path=path, context=context, namespace=namespace, is_local=is_local)
