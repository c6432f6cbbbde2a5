"""The ingest's bookkeeping in the admin: staff can read it, nobody can edit it, researchers cannot see it."""

import pytest
from django.urls import reverse
from django.utils import timezone

from inventory.models import Node
from monitoring.ingest.models import AgentSession, NodeStatusChange, SecurityEvent
from monitoring.storage.models import RollupProgress

pytestmark = pytest.mark.django_db

MODELS = [AgentSession, NodeStatusChange, RollupProgress, SecurityEvent]


@pytest.fixture
def rows():
    node = Node.objects.create(hostname="gpu-01")
    AgentSession.objects.create(node=node, session="s1", boot_id="b1", last_seq=41, connected_at=timezone.now())
    NodeStatusChange.objects.create(
        node=node, old_status="offline", new_status="online", reason="agent connected", created=timezone.now()
    )
    RollupProgress.objects.create(table="minute", done_until=timezone.now(), last_error="OperationalError: boom")
    SecurityEvent.objects.create(
        node=node,
        kind="foreign_gpu",
        gpu_uuid="GPU-x",
        detail="the agent of gpu-01 listed GPU GPU-x of gpu-02",
        created=timezone.now(),
    )


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_staff_can_read_it(client, cast, rows, model):
    client.force_login(cast["admin"])
    url = reverse(f"admin:monitoring_{model._meta.model_name}_changelist")
    response = client.get(url)
    assert response.status_code == 200
    assert client.get(url + "?q=gpu").status_code == 200


def test_the_last_rollup_error_is_shown(client, cast, rows):
    client.force_login(cast["admin"])
    assert b"OperationalError: boom" in client.get(reverse("admin:monitoring_rollupprogress_changelist")).content


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_nobody_can_add_to_it(client, cast, model):
    client.force_login(cast["admin"])
    assert client.get(reverse(f"admin:monitoring_{model._meta.model_name}_add")).status_code == 403


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_researchers_are_sent_to_the_admin_login(client, cast, model):
    client.force_login(cast["owner"])
    response = client.get(reverse(f"admin:monitoring_{model._meta.model_name}_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
