"""The JobSet's headless Service (spec 2.6; golden case G3).

With DNS hostnames on, a Service named after the subdomain (``network.subdomain``, else the
JobSet's name) selects every pod of the JobSet by ``jobset-name``: no cluster IP, no ports,
``publishNotReadyAddresses`` as the network says (unset: true), owned by the JobSet. An
existing Service of that name is left alone, whoever owns it; a deleted one is made again.
"""

from __future__ import annotations

from typing import Any

from trainop.cluster.controllers.jobset import keys
from trainop.cluster.controllers.jobset.children import owner_reference
from trainop.cluster.controllers.jobset.spec import (
    Raw,
    name_of,
    namespace_of,
    publish_not_ready,
    subdomain,
)


def headless_service(jobset: Raw) -> dict[str, Any]:
    """The Service body to create."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": subdomain(jobset),
            "namespace": namespace_of(jobset),
            "ownerReferences": [owner_reference(jobset)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": {keys.JOBSET_NAME: name_of(jobset)},
            "publishNotReadyAddresses": publish_not_ready(jobset),
        },
    }
