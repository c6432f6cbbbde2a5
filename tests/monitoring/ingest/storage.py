"""Raw samples for storage tests, written where the ingest writes them (daily partitions)."""

from datetime import datetime, timedelta

from inventory.models import GPU, Node
from monitoring.storage import partitions
from monitoring.storage.models import GPUSample


def make_gpus(count: int = 2, hostname: str = "gpu-01") -> list[GPU]:
    node = Node.objects.create(hostname=hostname)
    return [GPU.objects.create(node=node, index=i, uuid=f"GPU-{hostname}-{i}") for i in range(count)]


def store(gpu: GPU, start: datetime, count: int, step: timedelta = timedelta(seconds=1), **values) -> None:
    """count samples of gpu from start, every step; values are constants or functions of the sample's number."""
    stamps = [start + i * step for i in range(count)]
    first, last = stamps[0].date(), stamps[-1].date()
    partitions.create_missing(first + timedelta(days=n) for n in range((last - first).days + 1))
    GPUSample.objects.bulk_create(
        GPUSample(gpu=gpu, ts=ts, **{key: value(i) if callable(value) else value for key, value in values.items()})
        for i, ts in enumerate(stamps)
    )
