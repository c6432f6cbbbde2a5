"""Admins edit quotas, deadline windows and bookings in the admin; researchers cannot."""

import pytest
from django.urls import reverse

from reservations.models import CalendarFeed, DeadlineWindow, QuotaPolicy, Reservation, ReservationEvent

MODELS = [Reservation, QuotaPolicy, DeadlineWindow, ReservationEvent, CalendarFeed]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_pages_load_for_staff(client, cast, model):
    client.force_login(cast["admin"])
    opts = model._meta
    assert client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist") + "?q=a").status_code == 200


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_admin_pages_are_refused_to_researchers(client, cast, model):
    client.force_login(cast["owner"])
    opts = model._meta
    response = client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_an_admin_sets_the_weekly_limits(client, cast):
    client.force_login(cast["admin"])
    QuotaPolicy.current()
    url = reverse("admin:reservations_quotapolicy_change", args=[1])
    data = {"user_gpu_hours_per_week": 40, "project_gpu_hours_per_week": 200, "longest_booking_hours": 24}
    response = client.post(url, {**data, "furthest_ahead_days": 60})
    assert response.status_code == 302
    policy = QuotaPolicy.current()
    assert (policy.user_gpu_hours_per_week, policy.longest_booking_hours, policy.furthest_ahead_days) == (40, 24, 60)


def test_there_is_only_ever_one_quota_policy(client, cast):
    QuotaPolicy.current()
    client.force_login(cast["admin"])
    assert client.get(reverse("admin:reservations_quotapolicy_add")).status_code == 403


def test_an_admin_adds_a_deadline_window(client, cast):
    client.force_login(cast["admin"])
    data = {"name": "ICML 2031", "deadline_0": "2031-01-30", "deadline_1": "23:59:00", "window_days": 14}
    assert client.post(reverse("admin:reservations_deadlinewindow_add"), data).status_code == 302
    assert DeadlineWindow.objects.get().name == "ICML 2031"
