"""The common job engine (pure): given a job, the observed objects and the time, plan what to do.

Written once for every kind; kind-specific behaviour comes from ``frameworks``. No I/O, no clock
reads (``now`` is an argument), no asyncio.
"""
