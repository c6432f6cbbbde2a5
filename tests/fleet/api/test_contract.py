"""One API contract: the error shape everywhere, JSON bodies, named components, pages, the root, filters."""

import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from fleet.api.root import ENDPOINTS, endpoint_path
from monitoring.alerts.models import IdlePolicy
from tests.support.alerts import open_alert

ROOT = Path(__file__).resolve().parents[3]
# Answers without a login (it takes a password).
OPEN_TO_ANYONE = {"/api/token/"}
# Read with the ?after= cursor, 1000 at a time, to follow a run as it goes (docs/api.md).
CURSOR_LISTS = {"/api/runs/{id}/metrics/", "/api/runs/{id}/logs/"}


@pytest.fixture
def alice(cast):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    return api


@pytest.fixture
def admin(cast):
    api = APIClient()
    api.force_authenticate(cast["admin"])
    return api


@pytest.fixture
def schema(alice) -> dict:
    return alice.get("/api/schema/?format=json").json()


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def component(schema: dict, ref: str) -> dict:
    return schema["components"]["schemas"][ref.rsplit("/", 1)[1]]


def test_every_4xx_of_every_operation_is_declared_in_the_one_shape(schema):
    for path, method, operation in operations(schema):
        codes = set(operation["responses"])
        assert {"400", "401", "403"} <= codes or path in OPEN_TO_ANYONE, (path, method, codes)
        if "{" in path:
            assert "404" in codes, (path, method)
        for code, response in operation["responses"].items():
            if code.startswith("4"):
                shape = component(schema, response["content"]["application/json"]["schema"]["$ref"])
                assert {"detail", "errors"} <= set(shape["required"]), (path, method, code)


def test_request_bodies_are_json_only(schema):
    for path, method, operation in operations(schema):
        if "requestBody" in operation:
            assert set(operation["requestBody"]["content"]) == {"application/json"}, (path, method)


def test_every_list_comes_in_pages(schema):
    for path, method, operation in operations(schema):
        ok = operation["responses"].get("200", {}).get("content", {}).get("application/json", {}).get("schema", {})
        if method == "get" and path not in CURSOR_LISTS:
            assert ok.get("type") != "array", f"{path} answers a bare list"


def test_every_response_object_is_a_named_component(schema):
    for name, shape in schema["components"]["schemas"].items():
        for field, spec in shape.get("properties", {}).items():
            nested = spec.get("items", spec)
            assert not (nested.get("type") == "object" and "properties" in nested), f"{name}.{field} is unnamed"


def test_the_schema_generates_and_validates_without_a_warning(tmp_path):
    """drf-spectacular warns when it must guess a component's name or type; a generated client would
    then meet names that change with the code's layout."""
    schema = str(tmp_path / "schema.yaml")
    argv = [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", schema]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stderr, done.stderr


def test_the_api_root_lists_every_endpoint_and_each_answers(alice, schema):
    assert APIClient().get("/api/").status_code in (401, 403)
    body = alice.get("/api/").json()
    assert set(body["endpoints"]) == set(ENDPOINTS)
    prefixes = {endpoint_path(name) for name in ENDPOINTS}
    for path in set(schema["paths"]) - {"/api/"}:
        assert any(path.startswith(prefix) for prefix in prefixes), f"{path} is not under any listed endpoint"
    for name in ENDPOINTS:
        if "{" not in endpoint_path(name):
            # find and timeline need a query; budgets are for admins; the token endpoint takes POST only
            assert alice.get(endpoint_path(name)).status_code in (200, 400, 403, 405), name


def test_an_unknown_api_address_is_a_json_404(alice):
    response = alice.get("/api/nothing-here/")
    assert response.status_code == 404 and response.json()["errors"] == {}


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/runs/?status=AAA", "status"),
        ("/api/runs/?show=everything", "show"),
        ("/api/alerts/?scope=everyone", "scope"),
        ("/api/alerts/?status=closed", "status"),
    ],
)
def test_an_unknown_filter_value_is_a_400_naming_it(alice, url, field):
    response = alice.get(url)
    assert response.status_code == 400 and field in response.json()["errors"], response.content


def test_an_admin_filtering_bookings_by_an_unknown_user_gets_a_400(admin):
    response = admin.get("/api/reservations/?user=nobody")
    assert response.status_code == 400
    assert response.json()["errors"]["user"] == ["No researcher is called nobody."]


def test_a_second_idle_policy_for_a_project_is_a_400_with_a_sentence(admin, cast):
    assert admin.post("/api/idle-policies/", {"project": "vision"}).status_code == 201
    response = admin.post("/api/idle-policies/", {"project": "vision", "window_minutes": 5})
    assert response.status_code == 400
    assert response.json()["errors"]["project"] == ["This project already has an idle policy; change that one."]
    assert IdlePolicy.objects.get().window_minutes is None


def test_a_second_budget_for_a_researcher_is_a_400_with_a_sentence(admin, cast):
    assert admin.post("/api/budgets/users/", {"user": "alice", "monthly_budget": "10"}).status_code == 201
    response = admin.post("/api/budgets/users/", {"user": "alice", "monthly_budget": "20"})
    assert response.status_code == 400 and "already has a budget" in response.json()["detail"]


def test_an_admin_reads_anyones_alert_by_its_url(admin, alice, cast):
    alert = open_alert(owner=cast["teammate"])
    assert admin.get(f"/api/alerts/{alert.pk}/").json()["id"] == alert.pk
    assert alice.get(f"/api/alerts/{alert.pk}/").status_code == 404


def test_every_list_answers_pages(alice, admin):
    for name in ("reservations", "reservation_events", "quota", "holders", "runs", "sweeps", "workloads", "webhooks"):
        body = alice.get(endpoint_path(name), {"limit": 1}).json()
        assert {"count", "next", "previous", "results"} <= set(body), name
    for name in ("idle_policies", "user_budgets", "alerts", "notifications"):
        body = admin.get(endpoint_path(name)).json()
        assert "results" in body, (name, body)


def test_a_bad_item_of_a_list_field_names_the_field_and_the_item(alice, fleet_gpus):
    body = {"gpus": [fleet_gpus[0].uuid, -1], "start": "2030-01-01T10:00Z", "end": "2030-01-01T11:00Z"}
    response = alice.post("/api/reservations/", body)
    assert response.status_code == 400
    assert response.json()["errors"] == {"gpus": ["Item 1: Give a GPU UUID (GPU-…) or a GPU id."]}


def test_every_list_takes_the_largest_limit_and_offset_its_schema_allows(admin, schema):
    lists = [(path, operation) for path, method, operation in operations(schema) if method == "get"]
    lists = [(path, op) for path, op in lists if any(p["name"] == "offset" for p in op.get("parameters", []))]
    assert len(lists) >= 13
    for path, operation in lists:
        if "{" in path:
            continue
        paging = [p for p in operation["parameters"] if p["name"] in ("limit", "offset")]
        bounds = {p["name"]: p["schema"]["maximum"] for p in paging}
        response = admin.get(path, bounds)
        assert response.status_code in (200, 400), (path, response.status_code)
        assert not {"limit", "offset"} & set(response.json().get("errors", {})), (path, response.json())
        if response.status_code == 400:
            continue  # a required filter missing (find, timeline): the bounds were not at fault
        too_far = admin.get(path, {"offset": bounds["offset"] + 1})
        assert too_far.status_code == 400 and "offset" in too_far.json()["errors"], path


def test_a_run_lists_logs_and_metrics_as_its_schema_says_and_profiles_in_pages(alice, schema, cast):
    from training.models import Run, RunLog

    run = Run.objects.create(owner=cast["owner"], name="cnn", workload="digits_cnn", strategy="single")
    RunLog.objects.create(run=run, line="one")
    for name in ("logs", "metrics"):
        declared = schema["paths"][f"/api/runs/{{id}}/{name}/"]["get"]["responses"]["200"]
        assert declared["content"]["application/json"]["schema"]["type"] == "array", name
        assert isinstance(alice.get(f"/api/runs/{run.pk}/{name}/").json(), list), name
    profiles = alice.get(f"/api/runs/{run.pk}/profiles/").json()
    assert profiles == {"count": 0, "next": None, "previous": None, "results": []}


@pytest.mark.parametrize(
    ("url", "unknown"),
    [
        ("/api/runs/?stauts=failed", ["stauts"]),
        ("/api/fleet/?free=1", ["free"]),
        ("/api/alerts/?status=open&mine=1&x=2", ["mine", "x"]),
        ("/api/runs/1/?show=mine", ["show"]),
    ],
)
def test_an_unknown_query_parameter_is_a_400_naming_it(alice, url, unknown):
    response = alice.get(url)
    assert response.status_code == 400, response.content
    assert sorted(response.json()["errors"]) == unknown
    assert "this address takes" in response.json()["detail"]


def test_every_declared_query_parameter_is_taken(alice, schema):
    for path, method, operation in operations(schema):
        names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
        if method != "get" or "{" in path or not names or path == "/api/schema/":
            continue
        response = alice.get(path, {name: "" for name in names})
        unknown = set(response.json().get("errors", {})) - set(names)
        assert not unknown, (path, response.json())


def test_the_schema_says_which_text_may_not_be_blank(schema):
    token = component(schema, "#/components/schemas/TokenRequest")["properties"]
    assert token["username"]["minLength"] == token["password"]["minLength"] == token["name"]["minLength"] == 1
    assert component(schema, "#/components/schemas/Launch")["properties"]["workload"]["minLength"] == 1
    health = schema["paths"]["/api/gpus/{uuid}/health/"]["get"]["parameters"]
    days = next(p for p in health if p["name"] == "days")["schema"]
    assert (days["minimum"], days["maximum"]) == (1, 90)


def test_a_number_where_text_is_due_is_refused_by_name_and_nothing_is_stored(alice):
    from monitoring.notify.transports.webhook.models import Webhook

    response = alice.post("/api/webhooks/", {"name": 0, "url": "https://example.org/hook"}, format="json")
    assert response.status_code == 400 and response.json()["errors"] == {"name": ["Give text (a JSON string)."]}
    assert not Webhook.objects.exists()


def test_list_filters_are_declared_on_lists_only_and_refused_elsewhere(admin, schema, cast):
    for path, method, operation in operations(schema):
        if path.endswith("}/") or method != "get":  # a detail, or an operation that is not a read
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}
            assert not names & {"active", "status", "scope", "kind", "limit", "offset"}, (path, method, names)
    silence = admin.post("/api/silences/", {"kind": "idle_process", "minutes": 5, "reason": "maintenance"}).json()
    response = admin.get(f"/api/silences/{silence['id']}/?active=0.05")
    assert response.status_code == 400 and "active" in response.json()["errors"]
