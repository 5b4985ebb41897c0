"""Exec into running containers: ``execserver`` (the kubelet side), ``execclient`` and
``sshclient`` (the commands an MPI launcher runs as its remote shell)."""
