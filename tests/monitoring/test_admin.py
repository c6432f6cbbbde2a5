"""The admin pages of alerts, policies, reclaims, notifications, webhooks, usage and budgets load for staff only."""

import pytest
from django.urls import reverse

from monitoring.alerts.models import Alert, IdlePolicy, IdleStretch, Reclaim, ReclaimExemption
from monitoring.costs.models import UsageHour, UserBudget
from monitoring.notify.models import Notification, NotificationPreference
from monitoring.notify.transports.webhook.models import Webhook
from tests.support.alerts import open_alert

MODELS = [
    Alert,
    IdlePolicy,
    IdleStretch,
    ReclaimExemption,
    Reclaim,
    Webhook,
    NotificationPreference,
    Notification,
    UsageHour,
    UserBudget,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_pages_load_for_staff(client, cast, model):
    open_alert(owner=cast["owner"])
    client.force_login(cast["admin"])
    opts = model._meta
    assert client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist") + "?q=a").status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_pages_are_refused_to_researchers(client, cast, model):
    client.force_login(cast["owner"])
    opts = model._meta
    assert client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")).status_code == 302


def test_an_admin_exempts_a_user_and_is_recorded_as_the_one_who_did(client, cast):
    client.force_login(cast["admin"])
    client.post(reverse("admin:monitoring_reclaimexemption_add"), {"user": cast["owner"].pk, "reason": "debugging"})
    exemption = ReclaimExemption.objects.get()
    assert (exemption.user, exemption.created_by) == (cast["owner"], cast["admin"])


def test_an_exemption_names_exactly_one_subject(client, cast):
    client.force_login(cast["admin"])
    response = client.post(reverse("admin:monitoring_reclaimexemption_add"), {"reason": "nobody"})
    assert "Exempt exactly one user, node or run." in response.content.decode()
    assert not ReclaimExemption.objects.exists()


def test_the_alert_api_is_in_the_schema(client, cast):
    client.force_login(cast["owner"])
    schema = client.get("/api/schema/").content.decode()
    for path in ("/api/alerts/{id}/snooze/", "/api/costs/", "/api/webhooks/", "/api/notifications/read/"):
        assert path in schema
