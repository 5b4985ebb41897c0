"""The admission webhook configurations the operator serves and keeps the CA bundle of.

Two sets, each named by upstream's configuration names so a cluster can swap the upstream
operator for trainop:

- kubeflow.org/v1: the ValidatingWebhookConfiguration ``validator.training-operator.kubeflow.org``
  (``manifests/base``, written by hand), always injected;
- Trainer v2 (spec 6.1): the MutatingWebhookConfiguration ``defaulter.trainer.kubeflow.org``
  (the TrainJob defaulter) and the ValidatingWebhookConfiguration
  ``validator.trainer.kubeflow.org`` (the TrainJob, TrainingRuntime and ClusterTrainingRuntime
  validators; the runtime validators skip objects labelled
  ``trainer.kubeflow.org/webhook-validation: disabled`` through their objectSelector). They are
  built here (``trainer_configurations``; ``trainop manifests generate`` writes them to
  ``manifests/trainer/webhooks/``) and injected when the operator runs TrainJobs.

Every webhook calls the operator's Service (port 443, the webhook server's 9443 behind it) on the
paths ``controller.trainjob_admission`` serves, with ``failurePolicy: Fail`` and ``sideEffects:
None``. The CA bundle is left out: the operator injects it at run time
(``controller.cert_publishing``). Pure data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainop.api.trainer import constants as c
from trainop.controller import admission, trainjob_admission
from trainop.kube.resources import Resource

Obj = dict[str, Any]

VALIDATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
MUTATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
TRAINER_DEFAULTER = "defaulter.trainer.kubeflow.org"
TRAINER_VALIDATOR = "validator.trainer.kubeflow.org"
SERVICE_NAME = "training-operator"
SERVICE_NAMESPACE = "kubeflow"  # the overlays' namespace, as in the v1 configuration
SERVICE_PORT = 443
# Upstream's order in validator.trainer.kubeflow.org.
_VALIDATED = (c.CLUSTER_TRAINING_RUNTIME, c.TRAINING_RUNTIME, c.TRAINJOB)


@dataclass(frozen=True, slots=True)
class Configuration:
    """One webhook configuration object: its resource (mutating or validating) and name."""

    resource: Resource
    name: str


V1 = Configuration(VALIDATING, admission.CONFIGURATION_NAME)
TRAINER = (Configuration(MUTATING, TRAINER_DEFAULTER), Configuration(VALIDATING, TRAINER_VALIDATOR))


def injected(*, trainjobs: bool) -> tuple[Configuration, ...]:
    """The configurations whose CA bundle the operator keeps: the v1 one, and Trainer's when
    TrainJobs run (only then does the webhook server answer their paths)."""
    return (V1, *TRAINER) if trainjobs else (V1,)


def trainer_configurations() -> list[Obj]:
    """Trainer v2's MutatingWebhookConfiguration and ValidatingWebhookConfiguration (6.1)."""
    admit = trainjob_admission
    defaulter = _webhook(admit.DEFAULTER_NAME, admit.MUTATE_TRAINJOB, c.TRAINJOB)
    validators = [
        _webhook(admit.WEBHOOK_NAMES[kind], admit.VALIDATE_PATHS[kind], kind) for kind in _VALIDATED
    ]
    return [
        _configuration(MUTATING, TRAINER_DEFAULTER, [defaulter]),
        _configuration(VALIDATING, TRAINER_VALIDATOR, validators),
    ]


def _configuration(resource: Resource, name: str, webhooks: list[Obj]) -> Obj:
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": {"name": name, "labels": {"app": SERVICE_NAME}},
        "webhooks": webhooks,
    }


def _webhook(name: str, path: str, kind: str) -> Obj:
    webhook: Obj = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {
            "service": {
                "name": SERVICE_NAME,
                "namespace": SERVICE_NAMESPACE,
                "path": path,
                "port": SERVICE_PORT,
            }
        },
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "rules": [
            {
                "apiGroups": [c.GROUP],
                "apiVersions": [c.VERSION],
                "operations": ["CREATE", "UPDATE"],
                "resources": [c.PLURALS[kind]],
            }
        ],
    }
    if kind in c.RUNTIME_KINDS:
        webhook["objectSelector"] = {
            "matchExpressions": [
                {
                    "key": c.LABEL_WEBHOOK_VALIDATION,
                    "operator": "NotIn",
                    "values": [c.WEBHOOK_VALIDATION_DISABLED],
                }
            ]
        }
    return webhook
