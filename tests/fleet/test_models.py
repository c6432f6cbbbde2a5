"""The inventory refuses duplicates and impossible values at the database."""

import pytest
from django.db import IntegrityError, transaction

from inventory.models import GPU, GPUModel, Node, OsAccount, Project


@pytest.fixture
def node(db):
    return Node.objects.create(hostname="gpu-01")


def refused(create) -> bool:
    try:
        with transaction.atomic():
            create()
    except IntegrityError:
        return True
    return False


def test_the_datasheet_models_are_seeded(db):
    names = set(GPUModel.objects.values_list("name", flat=True))
    assert {"V100 SXM2 32GB", "A100 40GB", "A100 80GB", "H100 SXM", "H200", "L40S", "RTX 4090", "T4"} <= names
    h100 = GPUModel.objects.get(name="H100 SXM")
    assert (h100.memory_gib, h100.memory_bandwidth_gb_s, h100.tdp_w) == (80, 3350, 700)


def test_two_nodes_cannot_share_a_hostname(node):
    assert refused(lambda: Node.objects.create(hostname="gpu-01"))


def test_two_gpus_cannot_share_a_uuid(node):
    other = Node.objects.create(hostname="gpu-02")
    GPU.objects.create(node=node, index=0, uuid="GPU-1")
    assert refused(lambda: GPU.objects.create(node=other, index=0, uuid="GPU-1"))


def test_two_gpus_of_a_node_cannot_share_an_index(node):
    GPU.objects.create(node=node, index=0, uuid="GPU-1")
    assert refused(lambda: GPU.objects.create(node=node, index=0, uuid="GPU-2"))


def test_gpu_model_names_are_unique(db):
    model = GPUModel.objects.first()
    assert refused(
        lambda: GPUModel.objects.create(
            name=model.name,
            memory_gib=1,
            memory_bandwidth_gb_s=1,
            fp32_tflops=1,
            fp16_tflops=1,
            tdp_w=1,
            interconnect="PCIe",
            cost_per_gpu_hour=1,
        )
    )


def test_project_names_are_unique_and_budgets_not_negative(db):
    Project.objects.create(name="vision")
    assert refused(lambda: Project.objects.create(name="vision"))
    assert refused(lambda: Project.objects.create(name="nlp", monthly_budget=-1))


def test_an_os_username_maps_to_one_researcher(cast):
    OsAccount.objects.create(username="alice", user=cast["owner"])
    assert refused(lambda: OsAccount.objects.create(username="alice", user=cast["teammate"]))


def test_a_node_with_gpus_cannot_be_deleted_by_accident(node):
    from django.db.models import ProtectedError

    GPU.objects.create(node=node, index=0, uuid="GPU-1")
    with pytest.raises(ProtectedError):
        node.delete()
