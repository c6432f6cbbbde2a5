"""The monitoring app: telemetry, the live fleet, alerts, notifications, costs and GPU health."""

from django.apps import AppConfig


class MonitoringConfig(AppConfig):
    name = "monitoring"
    verbose_name = "Monitoring and alerts"

    def ready(self) -> None:
        # A burn-in run's end, however it came, stores its health records (training's run_finished signal).
        from monitoring.health import burnin_records as burnin  # noqa: F401

        # Alert events are told right after the commit that stored them (alerts' events_recorded signal).
        from monitoring.notify import from_events as dispatch  # noqa: F401

        # Every GPU gets its latest-state row when it is made (latest's post_save receiver).
        from monitoring.storage import latest  # noqa: F401
