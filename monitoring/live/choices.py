"""How a GPU's latest state reads on the live pages: its utilization band and why it throttles, with colours."""

from django.db import models


class UtilizationBand(models.TextChoices):
    """How busy a GPU is, from its utilization; the tile colour on the Fleet page."""

    UNKNOWN = "unknown", "N/A"
    IDLE = "idle", "Idle"
    LIGHT = "light", "Light"
    BUSY = "busy", "Busy"
    FULL = "full", "Full"

    @property
    def colour(self) -> str:
        return f"util-{self.value}"

    @classmethod
    def of(cls, util_gpu: float | None) -> "UtilizationBand":
        if util_gpu is None:
            return cls.UNKNOWN
        for floor, band in UTILIZATION_BAND_FLOORS:
            if util_gpu >= floor:
                return band
        return cls.IDLE


# The lowest utilization (%) of each band, busiest first; below 5 % a GPU counts as idle.


UTILIZATION_BAND_FLOORS = [
    (80, UtilizationBand.FULL),
    (40, UtilizationBand.BUSY),
    (5, UtilizationBand.LIGHT),
]


class ThrottleReason(models.TextChoices):
    """Why a GPU runs below its maximum clocks, grouped from NVML's clocks-event bits."""

    THERMAL = "thermal", "Thermal throttling"
    POWER = "power", "Power capping"
    HW_SLOWDOWN = "hw_slowdown", "Hardware slowdown"

    @property
    def colour(self) -> str:
        return THROTTLE_COLOURS[self]


THROTTLE_COLOURS = {
    ThrottleReason.THERMAL: "red",
    ThrottleReason.POWER: "amber",
    ThrottleReason.HW_SLOWDOWN: "red",
}
