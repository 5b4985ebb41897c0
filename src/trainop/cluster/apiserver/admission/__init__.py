"""What a write must pass before it is stored: ``admission`` (the one path), ``verdict`` (the
verdict on a custom resource, ``trainop validate``'s too), ``validation``,
``defaults`` (kube-apiserver's built-in defaulting), ``builtin_fields``, ``quantities``,
``crdschema`` (structural schemas of custom resources) and ``limits`` (the session's ceilings)."""
