"""One prebuilt SELECT reads the rows the ORM would, with their foreign keys attached, in one query."""

import pytest
from django.forms.models import model_to_dict

from inventory.models import GPU
from reservations.serializers import GPUS_WITH_NODE_AND_MODEL

pytestmark = pytest.mark.django_db


def test_gpus_come_with_the_same_fields_node_and_model_as_the_orm_reads(fleet_gpus, django_assert_num_queries):
    no_model = fleet_gpus[-1]
    GPU.objects.filter(pk=no_model.pk).update(model=None)
    wanted = [g.pk for g in fleet_gpus]
    expected = {g.pk: g for g in GPU.objects.select_related("node", "model").filter(pk__in=wanted)}
    with django_assert_num_queries(1):
        got = {g.pk: g for g in GPUS_WITH_NODE_AND_MODEL.fetch(wanted)}
        shown = {pk: (g.node.hostname, g.model.name if g.model else None) for pk, g in got.items()}
    assert got.keys() == expected.keys()
    for pk, gpu in got.items():
        assert model_to_dict(gpu) == model_to_dict(expected[pk])
        assert model_to_dict(gpu.node) == model_to_dict(expected[pk].node)
        assert (gpu.model and model_to_dict(gpu.model)) == (expected[pk].model and model_to_dict(expected[pk].model))
        assert shown[pk] == (expected[pk].node.hostname, expected[pk].model.name if expected[pk].model else None)
        assert not gpu._state.adding and gpu._state.db == "default"
    assert shown[no_model.pk][1] is None


def test_ids_that_match_nothing_read_nothing(fleet_gpus):
    assert GPUS_WITH_NODE_AND_MODEL.fetch([]) == []
    assert GPUS_WITH_NODE_AND_MODEL.fetch([999999, -1]) == []
    assert [g.pk for g in GPUS_WITH_NODE_AND_MODEL.fetch([fleet_gpus[2].pk, 999999])] == [fleet_gpus[2].pk]
