"""A researcher logs in through a real browser and sees the Fleet page."""

import pytest
from django.contrib.auth import get_user_model

from inventory.models import GPU, GPUModel, Node
from tests.conftest import PASSWORD, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_logs_in_and_sees_the_fleet(page, asgi_server, gpu_models):
    get_user_model().objects.create_user("alice", password=PASSWORD)
    node = Node.objects.create(hostname="gpu-h100-09")
    GPU.objects.create(node=node, index=0, uuid="GPU-e2e", model=GPUModel.objects.get(name="H100 SXM"))

    page.goto(asgi_server.url + "/fleet/")
    assert "/login/" in page.url
    log_in(page, asgi_server, "alice")
    page.goto(asgi_server.url + "/fleet/")
    assert page.locator("h1").inner_text() == "Fleet"
    assert page.locator("[data-node='gpu-h100-09']").is_visible()
    assert "H100 SXM" in page.locator("[data-gpu='GPU-e2e']").inner_text()


def test_a_wrong_password_keeps_the_visitor_out(page, asgi_server):
    get_user_model().objects.create_user("alice", password=PASSWORD)
    log_in(page, asgi_server, "alice", "wrong-password")
    assert "/login/" in page.url
    assert page.locator(".error").is_visible()
