"""The `__any` lookup: the same rows as `__in`, with one array parameter, on plain and foreign-key fields."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from inventory.models import GPU
from tests.support.telemetry import add_gpu


@pytest.fixture
def gpus(db):
    return [add_gpu(f"node-{n}", i) for n in range(3) for i in range(2)]


def test_it_finds_what_in_finds_by_key_by_foreign_key_and_by_text(gpus):
    ids = [gpus[0].pk, gpus[3].pk, gpus[5].pk]
    assert set(GPU.objects.filter(pk__any=ids)) == set(GPU.objects.filter(pk__in=ids)) == {gpus[0], gpus[3], gpus[5]}
    nodes = [gpus[2].node_id]
    assert set(GPU.objects.filter(node_id__any=nodes)) == {gpus[2], gpus[3]}
    assert set(GPU.objects.filter(node__any=nodes)) == {gpus[2], gpus[3]}
    assert set(GPU.objects.filter(uuid__any=[gpus[1].uuid, "GPU-none"])) == {gpus[1]}


def test_the_values_travel_as_one_array_parameter(gpus):
    with CaptureQueriesContext(connection) as queries:
        list(GPU.objects.filter(pk__any=[g.pk for g in gpus]))
    [query] = queries.captured_queries
    assert "= ANY(" in query["sql"] and " IN (" not in query["sql"]


def test_an_empty_list_matches_nothing_without_a_query(gpus):
    with CaptureQueriesContext(connection) as queries:
        assert list(GPU.objects.filter(pk__any=[])) == []
        assert GPU.objects.filter(pk__any=[]).update(name="x") == 0
    assert len(queries) == 0
    assert not GPU.objects.filter(name="x").exists()


def test_a_json_key_named_any_is_still_that_key(gpus):
    from monitoring.alerts.models import Alert

    assert "any" not in Alert._meta.get_field("details").get_lookups()
    query = str(Alert.objects.filter(details__any="x").query)
    assert "ANY(" not in query and "-> any" in query.replace("'", "").replace('"', "")
