"""Streaming subresources over WebSocket: ``streams`` (exec, attach), ``portforward``."""
