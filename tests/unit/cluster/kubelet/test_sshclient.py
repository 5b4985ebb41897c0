"""Local mode's ``ssh`` for v2beta1 launchers: options skipped, pod and namespace from the
worker's FQDN, the rest is the remote command."""

from __future__ import annotations

import subprocess
import sys

from trainop.cluster.kubelet.exec import sshclient


def test_open_mpi_style_command_lines() -> None:
    argv = ["-o", "ConnectionAttempts=10", "-x", "pi-worker-1.pi.team.svc", "orted", "-mca", "x"]
    assert sshclient.parse(argv) == ("pi-worker-1", "team", ["orted", "-mca", "x"])
    domain = ["-p", "2222", "root@pi-worker-0.pi.ns.svc.cluster.local", "--", "hostname"]
    assert sshclient.parse(domain) == ("pi-worker-0", "ns", ["--", "hostname"])
    assert sshclient.parse(["pi-worker-2", "true"]) == ("pi-worker-2", "", ["true"])


def test_it_runs_by_path_with_the_standard_library_only() -> None:
    """As OMPI_MCA_plm_rsh_agent runs it: python -I -S <path>; no kubelet: exit 255, a reason."""
    words = [*sshclient.shell_command().split(), "pi-worker-0.pi.ns.svc", "true"]
    done = subprocess.run(words, capture_output=True, text=True, env={}, check=False, timeout=30)
    assert done.returncode == 255
    assert done.stderr.startswith("ssh (trainop local): pi-worker-0: ")
    assert words[:3] == [sys.executable, "-I", "-S"]
