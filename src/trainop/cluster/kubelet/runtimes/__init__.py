"""What runs a container: ``runtime`` (the seam, and the host-process runtime), ``processes``
(process groups, exits), ``containers`` with ``containercli`` and ``podoptions`` (Podman and
Docker, note 095)."""
