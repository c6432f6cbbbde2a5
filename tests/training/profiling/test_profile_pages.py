"""The run page shows a run's profile, and its file downloads only for those who may see the run."""

import gzip
import json

import pytest
from rest_framework.test import APIClient

from training.models import Run, RunProfile

pytestmark = pytest.mark.django_db

TRACE = json.dumps({"traceEvents": [{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2}]}).encode()


@pytest.fixture
def profiled(cast):
    run = Run.objects.create(
        owner=cast["owner"],
        name="profiled",
        workload="digits_cnn",
        strategy="single",
        profiler={"kind": "torch", "wait": 1, "warmup": 1, "active": 2, "ranks": "0"},
    )
    RunProfile.objects.create(
        run=run,
        rank=0,
        kind="torch",
        data=gzip.compress(TRACE),
        size=len(TRACE),
        summary={
            "window": {"wait": 1, "warmup": 1, "active": 2},
            "operators": [
                {"name": "aten::convolution_backward", "calls": 4, "self_cpu_us": 2500.0, "cpu_total_us": 2600.0},
                {"name": "aten::mm", "calls": 8, "self_cpu_us": 1200.0, "cpu_total_us": 1250.0, "self_cuda_us": None},
            ],
            "split": {"steps": 2, "step_us": 5000.0, "total_us": 10000.0, "data_us": 1000.0, "compute_us": 9000.0},
        },
    )
    return run


def logged_in(client, user):
    client.force_login(user)
    return client


def test_the_run_page_shows_the_top_operators_and_the_step_split(client, cast, profiled):
    page = logged_in(client, cast["owner"]).get(f"/runs/{profiled.pk}/").content.decode()

    assert "aten::convolution_backward" in page and "2.5" in page
    assert "5.0 ms a step" in page and "9.0 ms (90.0 %)" in page and "1.0 ms (10.0 %)" in page
    assert "not measured" in page  # no communication in one process
    assert f"/runs/{profiled.pk}/profiles/0/file/" in page


def test_the_owner_downloads_the_trace_as_an_attachment(client, cast, profiled):
    response = logged_in(client, cast["owner"]).get(f"/runs/{profiled.pk}/profiles/0/file/")

    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"] == f'attachment; filename="run-{profiled.pk}-rank-0-trace.json"'
    assert json.loads(response.content)["traceEvents"][0]["name"] == "aten::mm"


def test_an_outsider_gets_no_trace(client, cast, profiled):
    assert logged_in(client, cast["outsider"]).get(f"/runs/{profiled.pk}/profiles/0/file/").status_code == 404


def test_someone_logged_out_is_sent_to_the_login_page(client, profiled):
    response = client.get(f"/runs/{profiled.pk}/profiles/0/file/")
    assert response.status_code == 302 and "/login" in response["Location"]


def test_a_rank_that_was_not_profiled_is_a_404(client, cast, profiled):
    assert logged_in(client, cast["owner"]).get(f"/runs/{profiled.pk}/profiles/1/file/").status_code == 404


def test_the_api_lists_profiles_and_serves_the_file_to_token_holders_who_may_see_the_run(cast, profiled):
    api = APIClient()
    api.force_authenticate(cast["owner"])

    listed = api.get(f"/api/runs/{profiled.pk}/profiles/").json()["results"]  # one page of them
    answer = api.get(listed[0]["file"])

    assert listed[0]["rank"] == 0 and listed[0]["kind"] == "torch" and listed[0]["size"] == len(TRACE)
    assert listed[0]["summary"]["operators"][0]["name"] == "aten::convolution_backward"
    assert answer.status_code == 200 and answer.content == TRACE
    api.force_authenticate(cast["outsider"])
    assert api.get(listed[0]["file"]).status_code == 404
    assert api.get(f"/api/runs/{profiled.pk}/profiles/").status_code == 404


def test_a_profiled_run_without_results_yet_says_when_they_come(client, cast):
    run = Run.objects.create(
        owner=cast["owner"], name="waiting", workload="digits_cnn", strategy="single", profiler={"kind": "torch"}
    )
    page = logged_in(client, cast["owner"]).get(f"/runs/{run.pk}/").content.decode()
    assert "The profile appears here when the run ends" in page
