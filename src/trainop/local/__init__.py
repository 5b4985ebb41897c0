"""Local mode, the session: ``trainop run`` and ``trainop local up`` assemble an embedded
cluster (``trainop.cluster``) and the operator, with the choice of runtime (``runtimes``), the
local addressing (``topology``, ``ports``) and the background daemon (``daemon``)."""
