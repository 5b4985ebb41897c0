"""Local mode: the embedded API server and its store, the process and simulated kubelets,
and sessions."""
