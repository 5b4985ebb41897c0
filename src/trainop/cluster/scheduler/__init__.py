"""The local scheduler: ``scheduling`` decides (pure), ``scheduler`` binds through the API.

See ``docs/design/090-local-scheduler.md``.
"""
