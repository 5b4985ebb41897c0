"""The Python SDK: ``TrainingClient`` with upstream kubeflow-training's method names (sync).

A script written for upstream ``kubeflow-training`` runs after changing its import to
``from trainop.sdk import TrainingClient``. Modules: ``client`` (the class), ``constants``
(upstream's names and values), ``builders`` (manifests from code and from functions),
``watching`` and ``logs`` (the async work the client runs), ``follow`` (the one job follower:
``trainop run``, ``trainop logs -f`` and ``get_job_logs(follow=True)``), ``logstreams`` (one log
stream per container instance), ``reporting`` (what a followed run reports and its outcome),
``bridge`` (its private event loop thread), ``config`` (which cluster), ``errors`` (the SDK
branch of ``trainop.errors``).
"""

from trainop.sdk import constants
from trainop.sdk.builders import Container, build_job
from trainop.sdk.client import TrainingClient
from trainop.sdk.errors import InvalidArgumentError, JobFailedError, SdkError, WaitTimeoutError

__all__ = [
    "Container",
    "InvalidArgumentError",
    "JobFailedError",
    "SdkError",
    "TrainingClient",
    "WaitTimeoutError",
    "build_job",
    "constants",
]
