"""kubeflow.org/v1 API layer (pure): job types, defaulting, validation, CRD schema generation.

No I/O and no imports from any other trainop layer; everything above builds on it.
"""
