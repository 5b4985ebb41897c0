"""trainop: one operator for distributed training jobs (kubeflow.org/v1).

Layers, from the top down (imports only go downward; import-linter enforces it):
cli -> sdk -> local -> controller -> kube -> engine -> frameworks -> api.
``api``, ``frameworks`` and ``engine`` are pure: values in, values out, no I/O, no clock reads.
"""

__version__ = "0.1.0"
