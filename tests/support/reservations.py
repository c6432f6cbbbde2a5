"""Fixtures for reservation tests: a small fleet of GPUs and times relative to a fixed hour."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.tokens import issue
from inventory.models import GPU, GPUModel, Node
from reservations.booking import BookingRequest, book

# node → (GPU model, how many GPUs)
SMALL_FLEET = {"gpu-a100-01": ("A100 80GB", 4), "gpu-a100-02": ("A100 80GB", 2), "gpu-t4-01": ("T4", 2)}


def make_fleet(layout: dict = SMALL_FLEET) -> list[GPU]:
    gpus = []
    for hostname, (model_name, count) in layout.items():
        node = Node.objects.create(hostname=hostname, status="online")
        model = GPUModel.objects.get(name=model_name)
        for index in range(count):
            gpus.append(GPU.objects.create(node=node, index=index, uuid=f"GPU-{hostname}-{index}", model=model))
    return gpus


@pytest.fixture
def fleet_gpus(db, gpu_models) -> list[GPU]:
    """gpu-a100-01:0-3 and gpu-a100-02:0-1 (A100 80GB), gpu-t4-01:0-1 (T4)."""
    return make_fleet()


def next_hour() -> datetime:
    return timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)


def at(hours: float) -> datetime:
    """`hours` after the next full hour."""
    return next_hour() + timedelta(hours=hours)


def booked(user, gpus, start_h: float, end_h: float, **extra):
    """Book GPUs from `start_h` to `end_h` hours after the next full hour."""
    request = BookingRequest(user=user, gpus=list(gpus), start=at(start_h), end=at(end_h), **extra)
    return book(request)


def token_of(user, name: str = "tests") -> str:
    """A new API token's key for `user`."""
    return issue(user, name)[1]


def api_client(token_key: str) -> APIClient:
    """An API client that sends `Authorization: Token <token_key>` with every request."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_key}")
    return client
