"""The explicit framework registry: kind → plugin. Adding a framework adds one line here.

Neighbours: every plugin module (``tensorflow`` ... ``jax``) exports ``FRAMEWORK``; the engine
and the controller look plugins up here and never branch on a kind's name.
"""

from __future__ import annotations

from types import MappingProxyType

from trainop.api.kinds import kind_info
from trainop.frameworks import dgl, jax, mpi, mxnet, paddle, pytorch, tensorflow, xgboost
from trainop.frameworks.base import Framework

REGISTRY = MappingProxyType(
    {
        plugin.kind: plugin
        for plugin in (
            tensorflow.FRAMEWORK,
            pytorch.FRAMEWORK,
            xgboost.FRAMEWORK,
            mxnet.FRAMEWORK,
            mpi.FRAMEWORK,
            paddle.FRAMEWORK,
            jax.FRAMEWORK,
            dgl.FRAMEWORK,
        )
    }
)


def framework_for(kind: str) -> Framework:
    """The plugin of ``kind`` (any spelling ``api.kinds.kind_info`` accepts)."""
    return REGISTRY[kind_info(kind).kind]
