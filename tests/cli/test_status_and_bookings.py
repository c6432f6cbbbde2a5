"""fleet status and book: the fleet as /api/fleet/ shows it, and bookings PostgreSQL refuses to overlap."""

import pytest
from django.utils import timezone

from inventory.choices import NodeStatus
from reservations.models import Reservation
from tests.support.gpus import set_state
from tests.training.conftest import add_node

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def t4_node(gpu_models):
    """An online node with two T4s, both reporting now, nobody on them."""
    node = add_node("gpu-t4-01", gpus=2, model="T4")
    node.status, node.last_seen = NodeStatus.ONLINE, timezone.now()
    node.save()
    for gpu in node.gpus.all():
        set_state(gpu, last_sample_at=timezone.now(), util_gpu=0.0, mem_used_mib=0.0, processes=[])
    return node


def test_status_free_lists_only_what_nobody_else_holds_and_parses_back(fleet, other_fleet, cast, t4_node):
    fleet.logged_in(cast["owner"])
    other_fleet.logged_in(cast["teammate"])
    assert other_fleet("book", "1xT4", "--for", "2h").code == 0

    free = fleet("status", "--free", "-o", "json")
    mine = other_fleet("status", "--free", "-o", "json")

    assert free.code == 0, free.err
    assert [gpu["index"] for gpu in free.json()] == [1]  # bob booked one of the two
    assert len(mine.json()) == 2  # his booking is free for him
    table = fleet("status", "--model", "T4").out
    assert "bob until" in table and ("CET" in table or "CEST" in table)  # times named in the user's zone


def test_an_overlapping_booking_of_a_second_user_is_refused_naming_the_holder(fleet, other_fleet, cast, t4_node):
    fleet.logged_in(cast["owner"])
    other_fleet.logged_in(cast["teammate"])
    uuid = t4_node.gpus.get(index=0).uuid

    booked = fleet("book", "--gpu", uuid, "--for", "4h", "-o", "json")
    refused = other_fleet("book", "--gpu", uuid, "--for", "1h")

    assert booked.code == 0, booked.err
    assert refused.code == 1
    assert "alice" in refused.err and len(refused.err.strip().splitlines()) == 1, refused.err
    assert Reservation.objects.filter(user=cast["teammate"]).count() == 0
    assert booked.json()["id"] in fleet("bookings").out
    assert fleet("unbook", booked.json()["id"]).code == 0
    assert other_fleet("book", "--gpu", uuid, "--for", "1h").code == 0


def test_bad_booking_input_is_refused_before_anything_is_sent(fleet, cast, t4_node):
    fleet.logged_in(cast["owner"])

    for args in (["1xT4", "--for", "-1h"], ["0xT4", "--for", "1h"], ["1xT4", "--for", "soon"]):
        answer = fleet("book", *args)
        assert answer.code == 2 and len(answer.err.strip().splitlines()) == 1, answer.err

    assert not Reservation.objects.exists()
