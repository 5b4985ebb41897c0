"""The local control plane's controllers (kube-controller-manager's part): API clients only.

``jobs``: batch/v1 Jobs as Kubernetes 1.36 runs them (note 130).
"""
