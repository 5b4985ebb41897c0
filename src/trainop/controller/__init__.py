"""Controller runtime: work queue, reconciler, manager, leader election, metrics, webhook
(Events are recorded through ``kube.events``)."""
