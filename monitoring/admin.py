"""Admin of the monitoring app: each area registers its own models."""

import monitoring.alerts.admin  # noqa: F401
import monitoring.costs.admin  # noqa: F401
import monitoring.health.admin  # noqa: F401
import monitoring.ingest.admin  # noqa: F401
import monitoring.notify.admin  # noqa: F401
import monitoring.storage.admin  # noqa: F401
