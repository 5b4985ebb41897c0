"""Framework plugins (pure): one small file per framework plus an explicit registry.

A plugin is data (a frozen spec) plus pure functions (env, optional success rule, validation,
extra objects). It never does I/O and never branches on cluster mode; it sees other replicas
only through the Topology it is given. Besides the plugins: ``base`` (the spec, protocols and
capability data), ``registry``, ``topology``, and what plugins share but is no engine concern:
``mpirun`` (hostfile formats, remote shell variables), ``container_templates`` (Go templates).
"""
