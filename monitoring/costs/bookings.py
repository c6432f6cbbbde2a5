"""What a booking cost: held (its whole window), used (its holder's measured GPU time there) and idle (the rest).

Used time comes from raw process samples while they are kept (FLEET_RAW_RETENTION_HOURS), then from
the hourly usage rollup, which counts whole hours that the booking touches.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection
from django.db.models import F, Sum
from django.utils import timezone

from inventory.models import OsAccount
from inventory.prices import price, rate_of
from monitoring.costs.models import UsageHour
from monitoring.costs.rollup import floor_hour
from reservations.choices import ReservationStatus
from reservations.models import Reservation
from training.models import Run

# The holder's processes (training.owners): those of the holder's runs, and those of the holder's OS users
# that belong to no run.
USED_SQL = """
SELECT count(DISTINCT ts) FROM monitoring_processsample
WHERE gpu_id = %s AND ts >= %s AND ts < %s
  AND (run_id = ANY(%s) OR (run_id IS NULL AND os_user = ANY(%s)))
"""


@dataclass(frozen=True)
class BookingCost:
    """One booked GPU's held, used and idle time and money."""

    reservation: Reservation
    held_hours: float
    used_hours: float
    rate: Decimal | None
    basis: str

    @property
    def idle_hours(self) -> float:
        return max(0.0, self.held_hours - self.used_hours)

    @property
    def held_cost(self) -> Decimal | None:
        return price(self.held_hours * 3600, self.rate)

    @property
    def used_cost(self) -> Decimal | None:
        return price(self.used_hours * 3600, self.rate)

    @property
    def idle_cost(self) -> Decimal | None:
        return price(self.idle_hours * 3600, self.rate)


def held_until(row: Reservation, now: datetime) -> datetime:
    """A released, cancelled or preempted booking stopped holding its GPU when its status changed."""
    ended_early = row.status in (ReservationStatus.RELEASED, ReservationStatus.CANCELLED, ReservationStatus.PREEMPTED)
    end = row.status_changed if ended_early and row.status_changed else row.end
    return max(row.start, min(end, now))


def os_names(user) -> list[str]:
    return [user.get_username(), *OsAccount.objects.filter(user=user).values_list("username", flat=True)]


def run_ids(row: Reservation) -> list[int]:
    """The holder's runs placed on the booked GPU."""
    return list(Run.objects.filter(owner_id=row.user_id, gpus=row.gpu_id).values_list("pk", flat=True))


def used_seconds(row: Reservation, until: datetime, now: datetime) -> tuple[float, str]:
    if row.start >= now - timedelta(hours=settings.FLEET_RAW_RETENTION_HOURS):
        with connection.cursor() as cursor:
            params = [row.gpu_id, row.start, until, run_ids(row), os_names(row.user)]
            cursor.execute(USED_SQL, params)
            return cursor.fetchone()[0] * settings.AGENT_INTERVAL_S, "samples"
    hours = UsageHour.objects.filter(
        gpu_id=row.gpu_id, user_id=row.user_id, bucket__gte=floor_hour(row.start), bucket__lt=until
    )
    return hours.aggregate(s=Sum("gpu_seconds"))["s"] or 0.0, "hourly"


def booking_cost(row: Reservation, now: datetime | None = None) -> BookingCost:
    now = now or timezone.now()
    until = held_until(row, now)
    held = (until - row.start).total_seconds()
    used, basis = used_seconds(row, until, now)
    return BookingCost(row, held / 3600, min(used, held) / 3600, rate_of(row.gpu), basis)


def booking_costs(start: datetime, end: datetime, limit: int = 100) -> list[BookingCost]:
    """Bookings that started in [start, end) and were not cancelled before starting, newest first."""
    rows = (
        Reservation.objects.filter(start__gte=start, start__lt=end, start__lte=timezone.now())
        .exclude(status=ReservationStatus.CANCELLED, status_changed__lte=F("start"))
        .select_related("gpu__node", "gpu__model", "user", "project")
        .order_by("-start")[:limit]
    )
    return [booking_cost(row) for row in rows]
