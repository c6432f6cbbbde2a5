"""The API fuzzed from its served schema (schemathesis): no server error, and every answer matches the schema.

Every check runs but "a schema-valid request is accepted": the schema cannot say that a GPU, project or
user must exist, or that `end` follows `start`, so such requests are rightly refused with a declared 400.

Each operation gets a fixed number of generated requests, valid and invalid, with a token; Hypothesis
runs derandomized (the same requests every run, no example database), so the test is repeatable and
bounded in time. The requests go to the WSGI app in this process, against the test database.
"""

import logging
import time
from contextlib import contextmanager

import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.support.alerts import open_alert
from tests.support.reservations import token_of
from training.models import Run, RunLog, RunMetric

EXAMPLES = {GenerationMode.POSITIVE: 6, GenerationMode.NEGATIVE: 4}


def fuzz(operation, mode: GenerationMode, headers: dict, failures: list) -> None:
    @settings(
        max_examples=EXAMPLES[mode],
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case):
        try:
            case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])
        except (Exception, BaseExceptionGroup) as failure:  # noqa: BLE001 - collected, reported together below
            failures.append(f"{mode} {operation.label}: {str(failure)[:600]}")

    try:
        run()
    except Unsatisfiable:
        assert mode == GenerationMode.NEGATIVE, operation.label  # nothing in it can be made invalid


@contextmanager
def keeping_the_test_connection():
    """The WSGI handler closes the database connection after each request; the test's transaction needs it
    (Django's test client does the same)."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@contextmanager
def quiet_4xx_warnings():
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)  # thousands of expected 4xx warnings
    try:
        yield
    finally:
        logger.setLevel(level)


def test_the_api_answers_every_generated_request_as_its_schema_says(cast, fleet_gpus):
    open_alert(owner=cast["owner"])
    run = Run.objects.create(owner=cast["owner"], name="cnn", workload="digits_cnn", strategy="single")
    RunLog.objects.create(run=run, line="epoch 1")  # so runs, their logs and metrics are answered with rows
    RunMetric.objects.create(run=run, ts=run.created, step=1, loss=0.5)
    headers = {"Authorization": f"Bearer {token_of(cast['admin'])}"}
    failures: list[str] = []
    with keeping_the_test_connection(), quiet_4xx_warnings():
        schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application(), headers=headers)
        for result in schema.get_all_operations():
            operation = result.ok()
            for mode in EXAMPLES:
                started = time.monotonic()
                fuzz(operation, mode, headers, failures)
                print(f"{operation.label} {mode}: {time.monotonic() - started:.1f} s")
    assert not failures, "\n\n".join(failures)
