"""No input reaches a 500: NUL and lone surrogates anywhere are a 400 naming the field, ids are checked."""

import json

import pytest
from django.db import DataError, connection, transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from fleet.api.text import first_bad_text, whole_number
from reservations.models import Reservation
from training.models import Run


@pytest.fixture
def alice(cast):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    return api


def assert_names(response, field: str):
    assert response.status_code == 400, response.content
    body = response.json()
    assert field in body["errors"] and body["detail"], body


@pytest.mark.parametrize("field", ["gpus", "node", "project", "model"])
def test_a_nul_in_a_launch_lookup_is_a_400_naming_the_field(alice, fleet_gpus, field):
    value = ["GPU-\u0000"] if field == "gpus" else "A\u0000"
    body = {"workload": "digits_cnn", "gpus": [fleet_gpus[0].uuid], field: value}
    assert_names(alice.post("/api/runs/", body, format="json"), field)
    assert not Run.objects.exists()


def test_a_lone_surrogate_in_a_body_is_a_400_naming_the_field(alice, fleet_gpus):
    raw = '{"workload": "digits_cnn", "name": "lr \\ud800", "gpus": []}'
    response = alice.post("/api/runs/", raw, content_type="application/json")
    assert_names(response, "name")


def test_a_nul_in_a_nested_key_names_the_top_field(alice, fleet_gpus):
    body = {"workload": "digits_cnn", "gpus": [fleet_gpus[0].uuid], "hyperparameters": {"l\u0000r": 1}}
    assert_names(alice.post("/api/runs/", body, format="json"), "hyperparameters")


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/reservations/find/?model=A%00100&count=1&hours=1", "model"),
        ("/api/reservations/?user=a%00b", "user"),
        ("/api/gpus/%00/", "uuid"),
        ("/api/gpus/GPU-1/series/?range=%00", "range"),
    ],
)
def test_a_nul_in_a_url_is_a_400_naming_it(alice, url, field):
    assert_names(alice.get(url), field)


def test_a_nul_in_a_page_address_is_a_400(client, cast, fleet_gpus):
    client.force_login(cast["owner"])
    response = client.get("/fleet/nodes/%00/")
    assert response.status_code == 400 and b"hostname" in response.content


def test_a_nul_in_a_booking_body_stores_nothing(alice, fleet_gpus):
    body = {"gpus": [fleet_gpus[0].pk], "start": "2030-01-01T10:00Z", "end": "2030-01-01T11:00Z", "purpose": "a\u0000"}
    assert_names(alice.post("/api/reservations/", body, format="json"), "purpose")
    assert not Reservation.objects.exists()


def test_a_non_numeric_alert_id_is_a_404(alice):
    response = alice.post("/api/alerts/abc/acknowledge/")
    assert response.status_code == 404 and response.json()["detail"]


@pytest.mark.parametrize("value", ["\u00b2", "12\u0000", "1" * 40, "-1"])
def test_marking_odd_notification_ids_read_is_refused_cleanly(client, cast, value):
    client.force_login(cast["owner"])
    response = client.post("/notifications/read/", {"id": value})
    assert response.status_code in (302, 400)


@pytest.mark.parametrize(
    "text", ['{"a": 1e999}', '{"a": NaN}', "[" * 100_000 + "]" * 100_000, '{"a": 1' + "0" * 5000 + "}"]
)
def test_hostile_json_is_a_400(alice, text):
    response = alice.post("/api/runs/estimate/", text, content_type="application/json")
    assert response.status_code == 400 and response.json()["detail"]


def test_a_form_body_is_refused_with_415(alice):
    response = alice.post("/api/runs/", {"workload": "digits_cnn"}, format="multipart")
    assert response.status_code == 415 and response.json()["detail"]


def test_whole_numbers_are_ascii_digits_in_range():
    assert whole_number("42") == 42
    assert [whole_number(v) for v in ("\u00b2", "٣", "-1", "", "1" * 19, " 1")] == [None] * 6


# Derandomized: the same 60 values every run, so CI never meets a case no earlier run met.
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    st.recursive(st.text() | st.integers() | st.none(), lambda kids: st.lists(kids) | st.dictionaries(st.text(), kids))
)
def test_the_walker_finds_exactly_the_values_postgres_refuses(db, value):
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT %s::jsonb", [json.dumps(value, ensure_ascii=False)])
        storable = True
    except (DataError, UnicodeEncodeError):
        storable = False
    assert (first_bad_text(value) is None) == storable
