"""Kubernetes client layer: the client protocol, the HTTP client, informer caches, errors, a fake.

API errors are mapped to ``trainop.errors`` here, once.
"""
