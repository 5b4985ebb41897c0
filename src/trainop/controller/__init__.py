"""Controller runtime: work queue, reconciler, manager, leader election, events, metrics,
webhook."""
