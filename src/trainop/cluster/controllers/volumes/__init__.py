"""Local volumes: the provisioner that binds PersistentVolumeClaims to directories (note 132).

``provisioner.LocalProvisioner`` is the controller the local session runs; ``binding`` holds
its pure decisions, ``directories`` the claim directories under the session's private state,
``jobsetclaims`` JobSet's ``volumeClaimPolicies`` (the claims a JobSet's Jobs share).
"""

from __future__ import annotations

from trainop.cluster.controllers.volumes.binding import DEFAULT_CLASS, PROVISIONER
from trainop.cluster.controllers.volumes.provisioner import LocalProvisioner

__all__ = ["DEFAULT_CLASS", "PROVISIONER", "LocalProvisioner"]
