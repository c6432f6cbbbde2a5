"""Idle-process thresholds per project and budgets: bad values get a clear error and store nothing."""

import pytest
from django.db import IntegrityError, transaction
from rest_framework.test import APIClient

from inventory.models import Project
from monitoring.alerts.models import IdlePolicy
from monitoring.costs.models import UserBudget


@pytest.fixture
def admin_api(cast):
    api = APIClient()
    api.force_authenticate(cast["admin"])
    return api


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("min_memory_mib", -1, "Memory cannot be negative"),
        ("max_util_pct", -5, "above 0 %"),
        ("max_util_pct", 0, "above 0 %"),
        ("max_util_pct", 101, "cannot exceed 100 %"),
        ("window_minutes", 0, "at least one minute"),
        ("window_minutes", -30, "at least one minute"),
        ("reclaim_grace_s", 0, "at least one second"),
    ],
)
def test_the_api_refuses_impossible_thresholds(admin_api, cast, field, value, words):
    response = admin_api.post("/api/idle-policies/", {"project": "vision", field: value}, format="json")
    assert response.status_code == 400
    assert words in response.json()["errors"][field][0]
    assert not IdlePolicy.objects.exists()


def test_a_policy_overrides_only_what_it_names(admin_api, cast):
    response = admin_api.post("/api/idle-policies/", {"project": "vision", "window_minutes": 15}, format="json")
    assert response.status_code == 201
    from monitoring.alerts.policies import PolicyBook

    limits = PolicyBook().for_project(cast["project"].pk)
    assert (limits.window_minutes, limits.min_memory_mib, limits.max_util_pct, limits.reclaim) == (15, 1024, 5.0, False)


def test_researchers_read_policies_but_do_not_change_them(cast):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    assert api.get("/api/idle-policies/").status_code == 200
    assert api.post("/api/idle-policies/", {"project": "vision", "reclaim": True}, format="json").status_code == 403
    assert not IdlePolicy.objects.exists()


def test_the_database_refuses_a_zero_window_too(cast):
    with pytest.raises(IntegrityError), transaction.atomic():
        IdlePolicy.objects.create(project=cast["project"], window_minutes=0)


def test_the_admin_form_refuses_a_negative_threshold(client, cast):
    client.force_login(cast["admin"])
    response = client.post(
        "/admin/monitoring/idlepolicy/add/",
        {"project": cast["project"].pk, "min_memory_mib": -10, "window_minutes": 0, "reclaim_grace_s": 30},
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "Memory cannot be negative." in body and "The window must be at least one minute." in body
    assert not IdlePolicy.objects.exists()


def test_a_budget_below_zero_is_refused(admin_api, cast, client):
    response = admin_api.post("/api/budgets/users/", {"user": "alice", "monthly_budget": "-1"}, format="json")
    assert response.status_code == 400 and "below zero" in response.json()["errors"]["monthly_budget"][0]
    client.force_login(cast["admin"])
    change = f"/admin/fleet/project/{cast['project'].pk}/change/"
    response = client.post(change, {"name": "vision", "monthly_budget": "-5"})
    assert response.status_code == 200 and "A budget cannot be below zero." in response.content.decode()
    assert Project.objects.get().monthly_budget == 1000
    assert not UserBudget.objects.exists()


def test_only_admins_set_budgets(cast):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    assert api.post("/api/budgets/users/", {"user": "alice", "monthly_budget": "10"}, format="json").status_code == 403
