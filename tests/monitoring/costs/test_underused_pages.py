"""The underused-GPU report comes in pages, on the Costs page and in the API, never cut off silently."""

from datetime import timedelta
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from monitoring.alerts.choices import IdleStretchKind
from monitoring.alerts.models import IdleStretch
from tests.support.monitoring import T0

pytestmark = pytest.mark.django_db

MIN = timedelta(minutes=1)
COUNT = 130  # more than a page of 100


@pytest.fixture
def underused_processes(cast, gpu, clock):
    """130 underused processes on one GPU; pid n idle n minutes, so the most idle has the highest pid."""
    IdleStretch.objects.bulk_create(
        IdleStretch(
            key=f"idle_process:{gpu.uuid}:{pid}:0",
            kind=IdleStretchKind.UNDERUSED,
            gpu=gpu,
            pid=pid,
            os_user="alice",
            name="vllm",
            owner=cast["owner"],
            began=T0 - pid * MIN,
            until=T0,
            rate=Decimal("2.00"),
        )  # fmt: skip
        for pid in range(1, COUNT + 1)
    )


def api_get(user, url: str) -> dict:
    api = APIClient()
    api.force_authenticate(user)
    response = api.get(url)
    assert response.status_code == 200, response.content
    return response.json()


def test_the_api_lists_every_underused_process_in_pages(cast, underused_processes):
    first = api_get(cast["outsider"], "/api/costs/underused/?month=2026-11")
    assert first["count"] == COUNT and len(first["results"]) == 100 and first["previous"] is None
    assert [u["pid"] for u in first["results"][:2]] == [COUNT, COUNT - 1]  # most idle first
    rest = api_get(cast["outsider"], first["next"])
    assert [u["pid"] for u in rest["results"]] == list(range(30, 0, -1)) and rest["next"] is None


def test_the_cost_report_gives_the_first_page_and_the_way_to_the_next(cast, underused_processes):
    report = api_get(cast["outsider"], "/api/costs/?month=2026-11")["underused"]
    assert report["count"] == COUNT and len(report["results"]) == 100
    assert "/api/costs/underused/?" in report["next"] and "offset=100" in report["next"]
    assert "month=2026-11" in report["next"]


def test_the_costs_page_shows_the_rest_on_its_next_page(client, cast, underused_processes):
    client.force_login(cast["owner"])
    first = client.get("/costs/?month=2026-11").content.decode()
    assert first.count("data-underused=") == 100 and "Page 1 of 2" in first
    assert 'href="?month=2026-11&amp;underused_page=2#underused"' in first
    second = client.get("/costs/?month=2026-11&underused_page=2").content.decode()
    assert second.count("data-underused=") == 30 and "Page 2 of 2" in second
