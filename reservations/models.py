"""Reservations: GPUs held for a time window, the rules that limit them and what happened to them."""

import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import DateTimeRangeField, RangeBoundary, RangeOperators
from django.contrib.postgres.fields.ranges import BigIntegerRangeField
from django.db import models
from django.db.models import F, Func, Q

from inventory.models import GPU, Project
from reservations.choices import ReservationEventKind, ReservationStatus


class TsTzRange(Func):
    function = "TSTZRANGE"
    output_field = DateTimeRangeField()


class Int8Range(Func):
    function = "INT8RANGE"
    output_field = BigIntegerRangeField()


def gpu_as_range() -> Int8Range:
    # [id, id] overlaps only itself: `&&` on ranges has a built-in GiST opclass, while `gpu_id WITH =`
    # would need btree_gist, which the embedded PostgreSQL does not ship.
    return Int8Range(F("gpu"), F("gpu"), RangeBoundary(inclusive_lower=True, inclusive_upper=True))


class Reservation(models.Model):
    """One GPU held by one booking for [start, end); PostgreSQL refuses two active ones that overlap."""

    booking = models.UUIDField(default=uuid.uuid4, editable=False, help_text="Rows booked together share it.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="reservations")
    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="reservations", null=True, blank=True)
    gpu = models.ForeignKey(GPU, on_delete=models.PROTECT, related_name="reservations")
    start = models.DateTimeField()
    end = models.DateTimeField()
    purpose = models.CharField(max_length=200, blank=True)
    deadline_name = models.CharField(max_length=100, blank=True, help_text="e.g. NeurIPS 2026")
    deadline_date = models.DateField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ReservationStatus.choices, default=ReservationStatus.ACTIVE)
    status_changed = models.DateTimeField(null=True, blank=True)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        related_name="reservations_changed",
        null=True,
        blank=True,
        help_text="Who last cancelled, preempted or moved it, when not the holder.",
    )
    first_used_at = models.DateTimeField(null=True, blank=True, help_text="First time a holder's process was seen.")
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "fleet_reservation"  # made when bookings lived in the inventory app
        ordering = ["start", "gpu_id"]
        constraints = [
            models.CheckConstraint(condition=Q(start__lt=F("end")), name="reservation_starts_before_it_ends"),
            ExclusionConstraint(
                name="reservation_no_overlap",
                index_type="GIST",
                expressions=[
                    (gpu_as_range(), RangeOperators.OVERLAPS),
                    (TsTzRange("start", "end", RangeBoundary()), RangeOperators.OVERLAPS),
                ],
                condition=Q(status=ReservationStatus.ACTIVE),
                violation_error_message="This GPU is already booked for part of that time.",
            ),
        ]
        indexes = [
            models.Index(fields=["booking"], name="reservation_booking"),
            models.Index(fields=["gpu", "end"], name="reservation_gpu_end"),
            models.Index(fields=["user", "start"], name="reservation_user_start"),
        ]

    def __str__(self) -> str:
        return f"{self.gpu_id} for {self.user_id} {self.start:%Y-%m-%d %H:%M}–{self.end:%Y-%m-%d %H:%M} UTC"

    @property
    def hours(self) -> float:
        return (self.end - self.start).total_seconds() / 3600

    @property
    def colour(self) -> str:
        return ReservationStatus(self.status).colour


class QuotaPolicy(models.Model):
    """The fleet's booking rules (a single row); empty limits mean no limit."""

    user_gpu_hours_per_week = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPU-hours one researcher may book per calendar week."
    )
    project_gpu_hours_per_week = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPU-hours all members together may book for one project per week."
    )
    longest_booking_hours = models.PositiveIntegerField(
        null=True, blank=True, default=168, help_text="Longest window of a single booking."
    )
    furthest_ahead_days = models.PositiveIntegerField(default=90, help_text="How far ahead a booking may start.")

    class Meta:
        db_table = "fleet_quotapolicy"  # made when bookings lived in the inventory app
        verbose_name = "quota policy"
        verbose_name_plural = "quota policy"
        constraints = [models.CheckConstraint(condition=Q(id=1), name="quotapolicy_single_row")]

    def __str__(self) -> str:
        return "Booking quotas"

    @classmethod
    def current(cls) -> "QuotaPolicy":
        policy, _ = cls.objects.get_or_create(pk=1)
        return policy


class DeadlineWindow(models.Model):
    """The days before a named deadline, when limits tighten and bookings must name their deadline."""

    name = models.CharField(max_length=100, help_text="e.g. NeurIPS 2026")
    deadline = models.DateTimeField()
    window_days = models.PositiveSmallIntegerField(default=14)
    user_gpu_hours_per_week = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the usual limit.")
    project_gpu_hours_per_week = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the usual limit.")
    longest_booking_hours = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the usual limit.")

    class Meta:
        db_table = "fleet_deadlinewindow"  # made when bookings lived in the inventory app
        ordering = ["deadline"]
        constraints = [
            models.CheckConstraint(condition=Q(window_days__gte=1), name="deadlinewindow_at_least_a_day"),
            models.UniqueConstraint(fields=["name", "deadline"], name="deadlinewindow_unique_name_and_deadline"),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.deadline:%Y-%m-%d})"

    @property
    def opens(self):
        return self.deadline - timedelta(days=self.window_days)


class ReservationEvent(models.Model):
    """Something that happened to a reservation its holder must hear about (preempted, released, squatting)."""

    kind = models.CharField(max_length=20, choices=ReservationEventKind.choices)
    reservation = models.ForeignKey(Reservation, on_delete=models.CASCADE, related_name="events")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="reservation_events",
        help_text="Who is affected: the holder of the reservation.",
    )
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        related_name="reservation_actions",
        null=True,
        blank=True,
        help_text="The admin who preempted or changed it, or the researcher found squatting.",
    )
    os_user = models.CharField(max_length=64, blank=True, help_text="Squatting: the process's OS user.")
    pid = models.PositiveIntegerField(null=True, blank=True)
    detail = models.TextField()
    created = models.DateTimeField(auto_now_add=True)
    last_seen = models.DateTimeField(null=True, blank=True, help_text="Squatting: last time the process was seen.")
    emailed_at = models.DateTimeField(null=True, blank=True)
    email_error = models.TextField(blank=True)
    processed = models.DateTimeField(null=True, blank=True, help_text="When the alert engine took it up.")

    class Meta:
        db_table = "fleet_reservationevent"  # made when bookings lived in the inventory app
        ordering = ["-created"]
        constraints = [
            models.UniqueConstraint(
                fields=["reservation", "os_user"],
                condition=Q(kind=ReservationEventKind.SQUATTING),
                name="reservationevent_one_squatting_per_os_user",
            )
        ]
        indexes = [models.Index(fields=["user", "-created"], name="reservationevent_user_created")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.detail}"

    @property
    def colour(self) -> str:
        return ReservationEventKind(self.kind).colour


class CalendarFeed(models.Model):
    """A researcher's secret calendar address; only a hash of its token is stored."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="calendar_feed")
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "fleet_calendarfeed"  # made when bookings lived in the inventory app

    def __str__(self) -> str:
        return f"calendar of {self.user}"
