"""The Fleet page and /api/fleet/ show who holds each GPU now, and until when."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node
from reservations.choices import ReservationStatus
from reservations.models import Reservation


@pytest.fixture
def gpu(db):
    node = Node.objects.create(hostname="gpu-h100-07")
    return GPU.objects.create(node=node, index=0, uuid="GPU-held", model=GPUModel.objects.get(name="H100 SXM"))


def book(gpu, user, start, end, status=ReservationStatus.ACTIVE):
    return Reservation.objects.create(gpu=gpu, user=user, start=start, end=end, status=status)


def holder_of(client, uuid):
    gpus = [g for node in client.get("/api/fleet/").json()["nodes"] for g in node["gpus"]]
    return next(g for g in gpus if g["uuid"] == uuid)["holder"]


def test_a_booking_running_now_names_its_holder_and_end(client, cast, gpu):
    now = timezone.now()
    booking = book(gpu, cast["owner"], now - timedelta(hours=1), now + timedelta(hours=2))
    client.force_login(cast["teammate"])
    assert holder_of(client, "GPU-held") == {"user": "alice", "until": booking.end.timestamp()}
    page = client.get("/fleet/").content.decode()
    assert "Booked by <b>alice</b> until" in page


def test_a_future_or_cancelled_booking_holds_nothing_now(client, cast, gpu):
    now = timezone.now()
    book(gpu, cast["owner"], now + timedelta(hours=1), now + timedelta(hours=2))
    book(gpu, cast["teammate"], now - timedelta(hours=1), now + timedelta(minutes=30), ReservationStatus.CANCELLED)
    client.force_login(cast["owner"])
    assert holder_of(client, "GPU-held") is None
    assert "Booked by" not in client.get("/fleet/").content.decode()
