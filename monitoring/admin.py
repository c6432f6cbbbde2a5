"""Admin of the monitoring app: each area registers its own models."""

import monitoring.ingest.admin  # noqa: F401
import monitoring.storage.admin  # noqa: F401
