"""The local control plane's controllers (kube-controller-manager's part): API clients only.

``batchjob``: batch/v1 Jobs, as far as an MPIJob v2beta1 launcher needs (note 100).
"""
