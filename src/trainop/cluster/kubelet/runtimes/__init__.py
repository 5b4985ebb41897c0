"""What runs a container: ``runtime`` (the seam), ``stdio`` (a run's stdio, shared),
``processes`` (process groups, exits), ``host`` (the host-process runtime), and ``containers``
(Podman and Docker, note 095) with its parts: ``containercli`` (the CLIs' dialects),
``containerrun`` (one run), ``images``, ``network`` (the session network and pod holders),
``options`` (names, labels, mounts, limits), ``cdi`` (GPUs) and ``podoptions``
(securityContext, DNS)."""
