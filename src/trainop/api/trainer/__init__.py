"""Kubeflow Trainer v2 API (``trainer.kubeflow.org/v1alpha1``, v2.3.0): constants, models, the
JobSet subset a runtime embeds, and validation (pure, like the rest of ``trainop.api``)."""
