"""JobSet's controller (``jobset.x-k8s.io/v1alpha2``, v0.12.0) in the local control plane.

Pure decision modules, one per concern of the JobSet spec section 2 (``children``: child Job
bodies; ``counts``: classification and ``replicatedJobsStatus``; ``conditions``; ``success``;
``failure``; ``gating``: dependsOn and InOrder; ``suspension``; ``ttl``; ``service``), one
pass that combines them (``reconcile``) and the controller that applies a pass through the API
(``controller``). Neighbours: the Job controller (it runs the child Jobs; this package only
creates, updates and deletes Jobs and reads their status) and the embedded API server's JobSet
admission (``cluster/apiserver/admission/jobsets.py``). Note 131.
"""
