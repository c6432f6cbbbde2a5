"""The demo's bookings: a few now (on GPUs the simulated agents show their holders using) and a few ahead.

Made through the booking service like any researcher's, once per demo start: a booking whose holder
already has one with that purpose that has not ended is not made again.
"""

import logging
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.contrib.auth import get_user_model
from django.utils import timezone

from inventory.models import GPU, Project
from reservations.booking import BookingError, BookingRequest, book
from reservations.choices import ReservationStatus
from reservations.models import Reservation

log = logging.getLogger(__name__)


@dataclass
class DemoBooking:
    """Who books which GPUs of one node, when (days ahead, at a local hour; None for now) and for how long."""

    user: str
    project: str
    node: str
    indexes: tuple[int, ...]
    days_ahead: int | None
    at_hour: int
    hours: int
    purpose: str
    deadline_name: str = ""
    deadline_in_days: int | None = None


# The simulated agents run alice's trainers on GPUs 0 and 4 of each node and bob's on 5 and 7.
DEMO_BOOKINGS = [
    DemoBooking("alice", "vision", "gpu-h100-01", (0, 4), None, 0, 8, "ViT-L pretraining, run 3"),
    DemoBooking("bob", "language", "gpu-a100-01", (5, 7), None, 0, 6, "LLaMA-7B fine-tuning"),
    DemoBooking("carol", "language", "gpu-l40s-01", (3, 6), 1, 9, 8, "Tokenizer ablations"),
    DemoBooking("bob", "vision", "gpu-a100-02", (0, 1, 2, 3), 2, 10, 24, "Evaluation sweep"),
    DemoBooking(
        "alice",
        "vision",
        "gpu-h100-01",
        (1, 2, 3, 6),
        3,
        8,
        72,
        "Final ablations for the paper",
        deadline_name="ICML 2027",
        deadline_in_days=12,
    ),
]


def seed_bookings(now: datetime | None = None) -> int:
    """Make the demo bookings that are missing; return how many were made."""
    now = now or timezone.now()
    made = 0
    for wanted in DEMO_BOOKINGS:
        user = get_user_model().objects.get(username=wanted.user)
        if Reservation.objects.filter(
            user=user, purpose=wanted.purpose, status=ReservationStatus.ACTIVE, end__gt=now
        ).exists():
            continue
        try:
            book(request_for(wanted, user, now))
        except BookingError as exc:  # e.g. someone booked those GPUs in an earlier demo session
            log.info("demo booking %r not made: %s", wanted.purpose, exc.message)
        else:
            made += 1
    return made


def request_for(wanted: DemoBooking, user, now: datetime) -> BookingRequest:
    today = timezone.localdate(now)
    start = now if wanted.days_ahead is None else local_time(today + timedelta(days=wanted.days_ahead), wanted)
    gpus = list(GPU.objects.filter(node__hostname=wanted.node, index__in=wanted.indexes).select_related("node"))
    deadline = None if wanted.deadline_in_days is None else today + timedelta(days=wanted.deadline_in_days)
    return BookingRequest(
        user=user,
        gpus=gpus,
        start=start,
        end=start + timedelta(hours=wanted.hours),
        project=Project.objects.get(name=wanted.project),
        purpose=wanted.purpose,
        deadline_name=wanted.deadline_name,
        deadline_date=deadline,
    )


def local_time(day: date, wanted: DemoBooking) -> datetime:
    return timezone.make_aware(datetime.combine(day, time(wanted.at_hour)))
