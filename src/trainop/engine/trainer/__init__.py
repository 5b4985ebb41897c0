"""Kubeflow Trainer v2 planning (``trainer.kubeflow.org/v1alpha1``, release v2.3.0), pure.

Plain mappings in and out, so the controller passes informer objects straight in:
``info`` merges a TrainJob with its runtime (runtimePatches, trainer overrides, PodSets);
``plugins`` are upstream's roles, one small module each, run in ``plugins.registry``'s fixed
order; ``plan`` decides the objects to apply and the status; ``status`` holds the condition
rules; ``snapshot`` builds and checks the runtime snapshot ConfigMap; ``validate`` is the one
TrainJob admission function. Design note: docs/design/111-trainer-v2-planner.md.
"""
