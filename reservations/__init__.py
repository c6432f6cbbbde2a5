"""Reservations: booking GPUs ahead of time, quotas, the timeline, calendar feeds and the watcher."""
