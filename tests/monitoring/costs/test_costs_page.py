"""The Costs page and /api/costs/: spending by person, project, model, booking and run; budgets; waste."""

from datetime import timedelta
from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from monitoring.alerts.choices import IdleStretchKind
from monitoring.alerts.models import IdleStretch
from monitoring.costs.forecast import month_bounds
from monitoring.costs.idle_report import underused
from monitoring.costs.models import UserBudget
from monitoring.costs.rollup import rollup_usage
from reservations.models import Reservation
from tests.support.monitoring import T0
from tests.support.telemetry import add_gpu, process, stream
from training.choices import RunStatus
from training.models import Run

MIN = timedelta(minutes=1)


def half_idle(ts):
    return 0 if ts < T0 + 15 * MIN else 90


@pytest.fixture
def month(cast, gpu, clock):
    """30 min of alice on an A100 80GB (half of it idle), 60 min of bob on an L40S, 6 min of carol (no account)."""
    l40s = add_gpu("gpu-02", 0, model="L40S")
    stream(gpu, T0, T0 + 30 * MIN, util=half_idle, processes=[process(1, "alice")])
    stream(l40s, T0 - 30 * MIN, T0 + 30 * MIN, util=95, processes=[process(2, "bob")])
    stream(add_gpu("gpu-03", 0), T0, T0 + 6 * MIN, util=0, processes=[process(3, "carol")])
    clock.move_to(T0 + 32 * MIN)
    rollup_usage()
    return {"l40s": l40s}


def page(client, user, query="") -> str:
    client.force_login(user)
    response = client.get("/costs/" + query)
    assert response.status_code == 200
    return response.content.decode()


def test_it_shows_the_month_by_researcher_project_and_model(client, cast, month):
    body = page(client, cast["owner"])
    # alice $1.25 + bob $1.50 + carol $0.25 (A100 80GB $2.50/h, L40S $1.50/h)
    assert "data-total>$3.00<" in body
    for label in ("alice", "bob", "carol (no account)", "vision", "No project", "A100 80GB", "L40S"):
        assert f"<td>{label}</td>" in body


def test_it_shows_the_waste(client, cast, month):
    body = page(client, cast["owner"])
    # alice's idle quarter hour ($0.625) and carol's 6 idle minutes ($0.25)
    assert "data-idle-cost>$0.88<" in body
    assert "data-idle-hours>0.4<" in body


def test_budgets_come_with_a_forecast_at_the_recent_rate(client, cast, month):
    UserBudget.objects.create(user=cast["owner"], monthly_budget=Decimal("2"))
    body = page(client, cast["owner"])
    assert 'data-budget="project:' in body and 'data-budget="user:' in body
    assert "The month ends at" in body and "at the rate of the last" in body


def test_a_researcher_sees_only_their_own_personal_budget(client, cast, month):
    UserBudget.objects.create(user=cast["teammate"], monthly_budget=Decimal("2"))
    assert f'data-budget="user:{cast["teammate"].pk}"' not in page(client, cast["owner"])
    assert f'data-budget="user:{cast["teammate"].pk}"' in page(client, cast["admin"])


def test_bookings_show_held_used_and_idle_time(client, cast, gpu, month):
    booking = Reservation.objects.create(user=cast["owner"], gpu=gpu, start=T0 - 30 * MIN, end=T0 + 90 * MIN)
    body = page(client, cast["owner"])
    row = body.split(f'data-reservation="{booking.pk}"')[1].split("</tr>")[0]
    # held an hour so far, alice's process measured for half of it
    assert "1.0 h" in row and "0.5 h" in row and "$1.25" in row


def test_runs_show_their_cost(client, cast, gpu, month):
    run = Run.objects.create(
        owner=cast["owner"],
        name="digits",
        workload="digits_cnn",
        strategy="single",
        status=RunStatus.RUNNING,
        started_at=T0 - 28 * MIN,  # an hour before the page is read
    )
    run.gpus.add(gpu)
    row = page(client, cast["owner"]).split(f'data-run="{run.pk}"')[1].split("</tr>")[0]
    assert "$2.50" in row and "1.00" in row


def test_a_past_month_has_no_forecast(client, cast, month):
    body = page(client, cast["owner"], "?month=2026-10")
    assert "Past month: no forecast." in body and "No GPU time measured in 2026-10." in body


def test_a_month_that_is_not_a_month_is_refused_clearly(client, cast, month):
    body = page(client, cast["owner"], "?month=2026-13")
    assert "is not a month; use YYYY-MM" in body and "data-total>$3.00<" in body


def test_the_api_gives_the_same_report(cast, month):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    report = api.get("/api/costs/").json()
    assert report["month"] == "2026-11" and report["total"]["cost"] == "3.00"
    assert {x["label"] for x in report["by_user"]} == {"alice", "bob", "carol (no account)"}
    project = next(b for b in report["budgets"] if b["name"] == "Project vision")
    assert project["forecast"]["method"].startswith("the rate of the last")
    assert api.get("/api/costs/?month=nope").status_code == 400


def test_the_costs_api_needs_a_login():
    assert APIClient().get("/api/costs/").status_code in (401, 403)


@pytest.fixture
def stretches(cast, gpu, month):
    """Idle stretches as the idle rule records them: two forgotten on alice's A100, one underused on bob's L40S."""
    month_start = month_bounds(T0)[0]

    def stretch(kind, on, pid, owner, began, until, rate):
        return IdleStretch.objects.create(
            key=f"idle_process:{on.uuid}:{pid}:0", kind=kind, gpu=on, pid=pid, os_user=owner.username,
            name="python", owner=owner, began=began, until=until, rate=Decimal(rate),
        )  # fmt: skip

    forgotten, underused = IdleStretchKind.FORGOTTEN, IdleStretchKind.UNDERUSED
    stretch(forgotten, gpu, 1, cast["owner"], T0 - 90 * MIN, T0 - 30 * MIN, "2.50")  # 1 h, $2.50
    stretch(forgotten, gpu, 9, cast["owner"], month_start - 60 * MIN, month_start + 60 * MIN, "2.50")  # half in
    stretch(underused, month["l40s"], 2, cast["teammate"], T0 - 30 * MIN, T0, "1.50")  # 0.5 h, $0.75


def test_the_waste_panel_gives_long_idle_stretches_and_all_idle_samples_each_with_its_cost(client, cast, stretches):
    body = page(client, cast["owner"])
    long_stretches = body.split('data-waste="stretches"')[1].split("</tr>")[0]
    assert ">2.5<" in long_stretches and ">$5.75<" in long_stretches
    samples = body.split('data-waste="samples"')[1].split("</tr>")[0]
    assert ">0.4<" in samples and ">$0.88<" in samples


def test_underused_gpus_are_listed_with_their_idle_cost(client, cast, stretches, month):
    body = page(client, cast["owner"])
    row = body.split(f'data-underused="{month["l40s"].uuid}:2"')[1].split("</tr>")[0]
    assert "bob" in row and ">0.5<" in row and ">$0.75<" in row
    assert body.count("data-underused=") == 1  # the forgotten ones are alerts, not underused


def test_the_api_gives_the_idle_stretches_and_the_underused(cast, stretches, month):
    api = APIClient()
    api.force_authenticate(cast["outsider"])
    report = api.get("/api/costs/").json()
    assert report["idle_in_stretches"] == {"hours": 2.5, "cost": "5.75"}
    (line,) = report["underused"]["results"]
    assert (line["owner"], line["pid"], line["gpu"], line["stretches"]) == ("bob", 2, month["l40s"].uuid, 1)
    assert (line["idle_hours"], line["idle_cost"]) == (0.5, "0.75")


def test_the_digest_reads_one_owners_underused_gpus(cast, stretches):
    start, end = month_bounds(T0)
    assert [u.owner for u in underused(start, end, owner=cast["teammate"])] == ["bob"]
    assert underused(start, end, owner=cast["owner"]) == []  # alice's stretches are forgotten, not underused
