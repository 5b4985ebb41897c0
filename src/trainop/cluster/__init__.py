"""The embedded single-node Kubernetes of local and simulated modes (DESIGN section 6).

Four components that meet only through the API, as Kubernetes' own do (an import-linter
independence contract): ``apiserver`` (HTTP, REST handlers, admission, server-side apply,
streams, the store), ``kubelet`` (the pod lifecycle over a runtime: host processes, Podman or
Docker; the simulated kubelet), ``scheduler`` (binding pods that fit) and ``controllers`` (what
kube-controller-manager runs: batch Jobs). ``privacy`` (file modes of local state) is shared.
The session that assembles them with the operator is ``trainop.local``.
"""
