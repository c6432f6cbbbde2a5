"""A hello registers GPUs by UUID: new ones are added, its own follow their UUID, seeded rows are taken over;
another node's GPU is refused until an admin moves it."""

import pytest
from django.utils import timezone

from inventory.models import GPU, GPUModel, Node
from monitoring.ingest.hello import accept_hello
from monitoring.ingest.models import SecurityEvent
from monitoring.ingest.ownership import ForeignGPU, move_gpu
from monitoring.ingest.validation import check_hello
from tests.monitoring.ingest.agents import gpu_uuid, hello

pytestmark = pytest.mark.django_db


@pytest.fixture
def node(gpu_models):
    return Node.objects.create(hostname="gpu-01")


def say(node: Node, frame: dict):
    return accept_hello(node.pk, check_hello(frame), now=timezone.now())


def with_gpus(*pairs: tuple[int, str], name: str = "NVIDIA H100 80GB HBM3") -> dict:
    frame = hello("gpu-01", gpus=0)
    frame["gpus"] = [{"index": index, "uuid": uuid, "name": name} for index, uuid in pairs]
    return frame


def layout(node: Node) -> list[tuple[int, str]]:
    return list(GPU.objects.filter(node=node).order_by("index").values_list("index", "uuid"))


def test_it_adds_new_gpus(node):
    welcome = say(node, hello("gpu-01", gpus=3))
    assert layout(node) == [(i, gpu_uuid("gpu-01", i)) for i in range(3)]
    assert sorted(ref.index for ref in welcome.gpus.values()) == [0, 1, 2]


def test_gpus_that_swap_indexes_keep_their_rows(node):
    say(node, with_gpus((0, "GPU-a"), (1, "GPU-b")))
    rows = dict(GPU.objects.values_list("uuid", "pk"))
    say(node, with_gpus((0, "GPU-b"), (1, "GPU-a")))
    assert layout(node) == [(0, "GPU-b"), (1, "GPU-a")]
    assert dict(GPU.objects.values_list("uuid", "pk")) == rows


def test_a_gpu_of_another_node_is_refused_and_stays_where_it_is(node):
    other = Node.objects.create(hostname="gpu-02")
    theirs = GPU.objects.create(node=other, index=3, uuid="GPU-a")
    with pytest.raises(ForeignGPU) as refused:
        say(node, with_gpus((0, "GPU-b"), (1, "GPU-a")))
    assert refused.value.uuids == ["GPU-a"] and refused.value.close_code == 4403
    assert "GPU-a is registered to another node" in refused.value.detail
    theirs.refresh_from_db()
    assert (theirs.node, theirs.index) == (other, 3)
    assert layout(node) == []


def test_a_gpu_an_admin_moved_follows_its_uuid(node):
    other = Node.objects.create(hostname="gpu-02")
    moved = GPU.objects.create(node=other, index=3, uuid="GPU-a")
    move_gpu("GPU-a", "gpu-01", by="root")
    say(node, with_gpus((0, "GPU-a")))
    moved.refresh_from_db()
    assert (moved.node, moved.index) == (node, 0)
    event = SecurityEvent.objects.get()
    assert (event.node, event.kind, event.gpu_uuid) == (node, "gpu_moved", "GPU-a")
    assert event.detail == "GPU GPU-a moved from gpu-02 to gpu-01 by root"


def test_a_gpu_no_longer_announced_is_moved_out_of_the_way_of_a_known_one(node):
    say(node, with_gpus((0, "GPU-a"), (1, "GPU-b")))
    say(node, with_gpus((0, "GPU-b"), (1, "GPU-c")))
    rows = dict(GPU.objects.filter(node=node).values_list("uuid", "index"))
    assert rows["GPU-b"] == 0 and rows["GPU-c"] == 1 and rows["GPU-a"] > 1


def test_an_unknown_gpu_name_keeps_the_model_an_admin_chose(node):
    t4 = GPUModel.objects.get(name="T4")
    GPU.objects.create(node=node, index=0, uuid="GPU-a", name="Tesla T4 (custom)", model=t4)
    say(node, with_gpus((0, "GPU-a"), name="Tesla T4 (custom)"))
    assert GPU.objects.get(uuid="GPU-a").model == t4
    say(node, with_gpus((0, "GPU-a"), name="Some new board"))
    assert GPU.objects.get(uuid="GPU-a").model is None
