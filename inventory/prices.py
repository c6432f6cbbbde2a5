"""The price of a GPU-hour, once: the node's override (e.g. on-premises amortized), else the GPU model's rate."""

from decimal import Decimal

from inventory.models import GPU


def rate_of(gpu: GPU) -> Decimal | None:
    """USD per hour of this GPU, or None when neither its node nor its model has a price."""
    if gpu.node.cost_per_gpu_hour is not None:
        return gpu.node.cost_per_gpu_hour
    return gpu.model.cost_per_gpu_hour if gpu.model else None


def rates_by_gpu(gpu_ids) -> dict[int, Decimal | None]:
    """GPU id → its rate, read in one query."""
    gpus = GPU.objects.filter(id__in=gpu_ids).select_related("node", "model")
    return {gpu.id: rate_of(gpu) for gpu in gpus}


def price(seconds: float, rate: Decimal | None) -> Decimal | None:
    """What `seconds` of a GPU cost at `rate`, to a hundredth of a cent; None without a rate."""
    if rate is None:
        return None
    return (Decimal(str(seconds)) / 3600 * rate).quantize(Decimal("0.0001"))
