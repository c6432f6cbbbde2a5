"""GPUs are addressed by UUID everywhere (as NVML and /api/fleet/ give them); integer ids still work."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from fleet.api.text import whole_number

GPU_KEY_SCHEMA = {
    "oneOf": [{"type": "string", "example": "GPU-5c1f0b5e-…"}, {"type": "integer"}],
    "description": "A GPU's UUID (GPU-…), or its integer id.",
}


def gpu_keys(keys: list[str | int]) -> list[int | str]:
    """Each key as an integer id (a string of digits is one) or a UUID string."""
    return [
        key if isinstance(key, int) else (whole_number(key) if whole_number(key) is not None else key) for key in keys
    ]


@extend_schema_field(GPU_KEY_SCHEMA)
class GPUKeyField(serializers.Field):
    """One GPU key: a UUID string or an integer id."""

    default_error_messages = {"invalid": "Give a GPU UUID (GPU-…) or a GPU id."}

    def to_internal_value(self, data) -> int | str:
        if isinstance(data, bool) or not isinstance(data, int | str) or data in ("", None):
            self.fail("invalid")
        if isinstance(data, int) and not 0 < data < 2**63:
            self.fail("invalid")
        return data

    def to_representation(self, value):
        return value


def find_gpus(keys: list[str | int], fetch_ids=None) -> tuple[list, list[str]]:
    """The GPUs the keys name (with node and model), in order, and the keys that name none.

    ``fetch_ids`` reads GPUs by id (the booking path passes its prebuilt statement); one query per kind.
    """
    from inventory.models import GPU

    normal = gpu_keys(keys)
    ids = [key for key in normal if isinstance(key, int)]
    uuids = [key for key in normal if isinstance(key, str)]
    joined = GPU.objects.select_related("node", "model")
    by_id = {gpu.id: gpu for gpu in (fetch_ids or (lambda i: joined.filter(id__in=i)))(ids)} if ids else {}
    by_uuid = {gpu.uuid: gpu for gpu in joined.filter(uuid__in=uuids)} if uuids else {}
    found = [by_id.get(key) if isinstance(key, int) else by_uuid.get(key) for key in normal]
    missing = [str(key) for key, gpu in zip(keys, found, strict=True) if gpu is None]
    return found, list(dict.fromkeys(missing))
