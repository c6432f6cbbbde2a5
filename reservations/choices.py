"""Reservation choices with labels and colours, beside the reservation models."""

from django.db import models


class ReservationStatus(models.TextChoices):
    ACTIVE = "active", "Active"
    CANCELLED = "cancelled", "Cancelled"
    RELEASED = "released", "Released (no-show)"
    PREEMPTED = "preempted", "Preempted"
    ENDED = "ended", "Ended"

    @property
    def colour(self) -> str:
        return RESERVATION_STATUS_COLOURS[self]


RESERVATION_STATUS_COLOURS = {
    ReservationStatus.ACTIVE: "green",
    ReservationStatus.CANCELLED: "grey",
    ReservationStatus.RELEASED: "amber",
    ReservationStatus.PREEMPTED: "red",
    ReservationStatus.ENDED: "grey",
}


class ReservationEventKind(models.TextChoices):
    PREEMPTED = "preempted", "Preempted by an admin"
    RELEASED = "released", "Released: not used in time"
    SQUATTING = "squatting", "Someone else is using a booked GPU"
    CHANGED_BY_ADMIN = "changed_by_admin", "Changed by an admin"

    @property
    def colour(self) -> str:
        return RESERVATION_EVENT_COLOURS[self]


RESERVATION_EVENT_COLOURS = {
    ReservationEventKind.PREEMPTED: "red",
    ReservationEventKind.RELEASED: "amber",
    ReservationEventKind.SQUATTING: "red",
    ReservationEventKind.CHANGED_BY_ADMIN: "amber",
}
