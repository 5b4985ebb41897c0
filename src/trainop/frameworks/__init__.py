"""Framework plugins (pure): one small file per framework plus an explicit registry.

A plugin is data (a frozen spec) plus pure functions (env, optional success rule, validation,
extra objects). It never does I/O and never branches on cluster mode; it sees other replicas
only through the Topology it is given.
"""
