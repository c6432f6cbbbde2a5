"""Staff manage runs and sweeps in the admin; researchers cannot."""

import pytest
from django.urls import reverse

from training.models import Run, Sweep


@pytest.mark.parametrize("model", [Run, Sweep], ids=lambda m: m.__name__)
def test_admin_pages_load_for_staff(client, cast, model):
    Run.objects.create(owner=cast["owner"], name="r", workload="digits_cnn", strategy="single")
    client.force_login(cast["admin"])
    for view in ("changelist", "add"):
        url = reverse(f"admin:training_{model._meta.model_name}_{view}")
        assert client.get(url).status_code == 200
    assert client.get(reverse(f"admin:training_{model._meta.model_name}_changelist") + "?q=r").status_code == 200


def test_a_run_change_page_shows_its_node_shares(client, cast):
    run = Run.objects.create(owner=cast["owner"], name="r", workload="digits_cnn", strategy="single")
    client.force_login(cast["admin"])
    assert client.get(reverse("admin:training_run_change", args=[run.pk])).status_code == 200


def test_researchers_are_sent_to_the_admin_login(client, cast):
    client.force_login(cast["owner"])
    response = client.get(reverse("admin:training_run_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
