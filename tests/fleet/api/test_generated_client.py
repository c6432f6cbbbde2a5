"""A Python client generated from the served schema (openapi-python-client) lists the fleet, books a GPU,
reads a refused booking's error and follows a run's log and profiles, with `Authorization: Bearer`: the
contract a generated client relies on holds."""

import importlib
import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
from django.core.wsgi import get_wsgi_application
from django.utils import timezone
from rest_framework.test import APIClient

from tests.fleet.api.test_fuzz import keeping_the_test_connection
from tests.support.reservations import token_of
from training.models import Run, RunLog

GENERATOR = Path(sys.executable).parent / "openapi-python-client"
CONFIG = "post_hooks: []\nproject_name_override: fleet_client\npackage_name_override: fleet_client\n"


def generate_client(schema: dict, where: Path):
    (where / "schema.json").write_text(json.dumps(schema))
    (where / "config.yaml").write_text(CONFIG)
    command = [str(GENERATOR), "generate", "--path", "schema.json", "--meta", "none", "--config", "config.yaml"]
    done = subprocess.run(command, cwd=where, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Unable to process schema" not in done.stdout and "Cannot parse" not in done.stdout, done.stdout
    sys.path.insert(0, str(where))
    return importlib.import_module("fleet_client")


def test_a_generated_client_lists_the_fleet_books_reads_a_refusal_and_follows_a_run(
    cast, fleet_gpus, tmp_path, monkeypatch
):
    api = APIClient()
    api.force_authenticate(cast["owner"])
    schema = api.get("/api/schema/?format=json").json()
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [m for m in sys.modules if m == "fleet_client" or m.startswith("fleet_client.")]:
        monkeypatch.delitem(sys.modules, name)
    client_package = generate_client(schema, tmp_path)
    from fleet_client.api.fleet import fleet_retrieve
    from fleet_client.api.reservations import reservations_create
    from fleet_client.api.runs import runs_logs_list, runs_profiles_list, runs_retrieve
    from fleet_client.models import Booking, BookingCreate, BookingError

    token = token_of(cast["owner"])
    transport = httpx.WSGITransport(app=get_wsgi_application())
    client = client_package.AuthenticatedClient(
        base_url="http://testserver", token=token, prefix="Bearer", httpx_args={"transport": transport}
    )
    run = Run.objects.create(owner=cast["owner"], name="cnn", workload="digits_cnn", strategy="single")
    lines = [RunLog.objects.create(run=run, line=f"line {n}") for n in range(3)]
    start = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    with keeping_the_test_connection(), client:
        fleet = fleet_retrieve.sync(client=client)
        uuid = fleet_gpus[0].uuid
        assert uuid in {gpu.uuid for node in fleet.nodes for gpu in node.gpus}
        body = BookingCreate(gpus=[uuid], start=start, end=start + timedelta(hours=1))

        booked = reservations_create.sync_detailed(client=client, body=body)
        assert booked.status_code == 201 and isinstance(booked.parsed, Booking)
        assert booked.parsed.reservations[0].gpu.uuid == uuid

        refused = reservations_create.sync_detailed(client=client, body=body)
        assert refused.status_code == 400 and isinstance(refused.parsed, BookingError)
        assert "is taken by you" in refused.parsed.detail
        assert refused.parsed.errors["gpus"] == [refused.parsed.detail]
        assert refused.parsed.conflicts[0].gpu_uuid == uuid

        shown = runs_retrieve.sync(client=client, id=run.pk)
        assert shown.id == run.pk and shown.resumed_from is None
        followed = runs_logs_list.sync(client=client, id=run.pk, after=lines[0].pk)
        assert [line.line for line in followed] == ["line 1", "line 2"]
        assert runs_profiles_list.sync(client=client, id=run.pk).results == []
