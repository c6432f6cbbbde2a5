"""The GPU and node payloads of the JSON API, also sent to browsers over /ws/live/.

Every serializer here reads a plain mapping: the live path hands it the update dicts of the ingest,
the API hands it records built from the database rows (monitoring/live/state.py), so a tile on the page
and an item of /api/fleet/ are the same bytes. A missing value stays null ("N/A"), never zero.
"""

from collections.abc import Mapping

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from inventory.choices import NodeStatus
from monitoring.agent.metrics import (
    CLOCKS_EVENT_REASONS,
    LINK_METRICS,
    METRICS,
    NVLINK,
    Metric,
    current_links,
)
from monitoring.health.status import health_marks
from monitoring.live.choices import ThrottleReason, UtilizationBand
from reservations.availability import memory_holders
from training.owners import believed_run, owner_key

THROTTLE_BITS = {
    ThrottleReason.THERMAL: CLOCKS_EVENT_REASONS["sw_thermal_slowdown"] | CLOCKS_EVENT_REASONS["hw_thermal_slowdown"],
    ThrottleReason.POWER: CLOCKS_EVENT_REASONS["sw_power_cap"] | CLOCKS_EVENT_REASONS["hw_power_brake_slowdown"],
    ThrottleReason.HW_SLOWDOWN: CLOCKS_EVENT_REASONS["hw_slowdown"],
}


def throttle_reasons(mask: int | None) -> list[str]:
    """The throttle reasons set in a clocks-event bitmask (idle and application clocks are not throttling)."""
    if not mask:
        return []
    return [reason.value for reason, bits in THROTTLE_BITS.items() if mask & bits]


def owner_of(process: Mapping, owners: Mapping[str, str]) -> str | None:
    """The researcher's username for a process, from owners keyed by training.owners.owner_key."""
    key = owner_key(process)
    return owners.get(key) if key else None


def nullable(field_class, **kwargs):
    return field_class(allow_null=True, required=False, default=None, **kwargs)


class ProcessSerializer(serializers.Serializer):
    """A process on a GPU, with its run (when the fleet started it) and its owner (training.owners)."""

    pid = serializers.IntegerField()
    user = serializers.CharField(allow_blank=True, help_text="OS username on the node.")
    owner = serializers.SerializerMethodField(
        help_text="Researcher's username: the run's owner for a process the fleet started, else the one linked "
        "to its OS user; null when nobody is known."
    )
    run = serializers.SerializerMethodField(
        help_text="The run this process belongs to (checked by the server), or null."
    )
    unverified_run = serializers.SerializerMethodField(
        help_text="A run the process claimed that is not placed on this GPU: not believed, shown as a warning."
    )
    name = serializers.CharField(allow_blank=True)
    cmdline = serializers.CharField(allow_blank=True)
    mem_used_mib = nullable(serializers.FloatField)
    sm_util = nullable(serializers.FloatField)
    started_at = nullable(serializers.FloatField, help_text="UNIX seconds.")

    def get_owner(self, process: Mapping) -> str | None:
        return owner_of(process, self.context.get("owners", {}))

    def get_run(self, process: Mapping) -> int | None:
        return believed_run(process)

    def get_unverified_run(self, process: Mapping) -> int | None:
        run = process.get("unverified_run")
        return run if type(run) is int else None


def metric_field(metric: Metric) -> serializers.Field:
    """A metric's latest value: a float for a gauge, a whole number for a counter or a bitmask."""
    field_class = serializers.FloatField if metric.gauge else serializers.IntegerField
    return nullable(field_class, help_text=f"{metric.help} Unit: {metric.unit}.")


# What DRF's FloatField and IntegerField do to a metric's value, done without a field call per metric.
METRIC_CASTS = tuple((metric.key, float if metric.gauge else int) for metric in METRICS)
METRIC_KEY_SET = frozenset(key for key, _ in METRIC_CASTS) | {NVLINK}


def links_representation(state: Mapping) -> list[dict] | None:
    """Per-link NVLink values as the API writes them; null without NVLink, or when the GPU's latest ones are stale
    (metrics.current_links). They are kept as ingest/validation.check_links left them (every link key, a whole
    number or null), so they go out as they are: the live fan-out sends them up to four times a second."""
    return current_links(state.get(NVLINK), state.get("ts"))


class NvLinkSerializer(serializers.Serializer):
    """One NVLink of a GPU; its position in the list is the link's number."""

    locals().update(
        {m.key: nullable(serializers.IntegerField, help_text=f"{m.help} Unit: {m.unit}.") for m in LINK_METRICS}
    )


class FastMetricValues:
    """Writes the metric fields directly: the live fan-out serializes every GPU's state several times a
    second, and one DRF field call per metric was most of its cost. The fields stay declared for the schema."""

    @property
    def _readable_fields(self):
        # DRF walks every declared field for every state; the metric fields left out are most of them, so
        # the list is made once per serializer (a batch of states), not once per state.
        readable = self.__dict__.get("_fast_readable")
        if readable is None:
            readable = [field for field in super()._readable_fields if field.field_name not in METRIC_KEY_SET]
            self.__dict__["_fast_readable"] = readable
        return readable

    def to_representation(self, state: Mapping) -> dict:
        """state: a GPU's record (monitoring.live.state.gpu_record) or a live update, never a model instance."""
        data = super().to_representation(state)
        for key, cast in METRIC_CASTS:
            value = state.get(key)
            data[key] = None if value is None else cast(value)
        if NVLINK in state:  # a live update without it leaves the page's per-link figures as they are
            data[NVLINK] = links_representation(state)
        return data


# One nullable field per metric of the agent protocol, named by its key, in protocol order.
MetricsSerializer = serializers.SerializerMetaclass(
    "MetricsSerializer",
    (FastMetricValues, serializers.Serializer),
    {
        "__module__": __name__,
        **{metric.key: metric_field(metric) for metric in METRICS},
        NVLINK: NvLinkSerializer(
            many=True,
            allow_null=True,
            required=False,
            default=None,
            help_text="NVLink throughput per link, by link number, read at most 90 s before the latest sample; "
            "null on a GPU without NVLink (totals: nvlink_tx_kib_s, nvlink_rx_kib_s).",
        ),
    },
)


class GPUStateSerializer(MetricsSerializer):
    """The latest state of one GPU: what a live update carries."""

    uuid = serializers.CharField()
    node = serializers.CharField(help_text="Hostname of the node.")
    index = serializers.IntegerField()
    ts = nullable(serializers.FloatField, help_text="Time of the latest sample, UNIX seconds; null before any.")
    memory_total_mib = nullable(serializers.IntegerField)
    band = serializers.SerializerMethodField(help_text="Utilization band: unknown, idle, light, busy or full.")
    throttle = serializers.SerializerMethodField(help_text="Throttle reasons: thermal, power, hw_slowdown.")
    users = serializers.SerializerMethodField(help_text="Owners (or OS users where unknown) of its processes.")
    in_use_by = serializers.SerializerMethodField(
        help_text="Who holds its memory now (more than FREE_GPU_FOREIGN_MEMORY_MIB): the GPU is free only for them."
    )
    processes = ProcessSerializer(many=True, required=False, default=list)

    def get_band(self, state: Mapping) -> str:
        return UtilizationBand.of(state.get("util_gpu")).value

    def get_throttle(self, state: Mapping) -> list[str]:
        return throttle_reasons(state.get("clocks_event_reasons"))

    def get_users(self, state: Mapping) -> list[str]:
        owners = self.context.get("owners", {})
        names = {owner_of(p, owners) or p.get("user") for p in state.get("processes") or []}
        return sorted(name for name in names if name)

    def get_in_use_by(self, state: Mapping) -> list[str]:
        return memory_holders(state.get("processes") or [], self.context.get("owners", {}))


class HealthMarkSerializer(serializers.Serializer):
    label = serializers.CharField(help_text="A badge's word, e.g. Remap pending.")
    why = serializers.CharField(help_text="The sentence behind it.")


class GPUSerializer(GPUStateSerializer):
    """A GPU of the inventory with its latest state."""

    name = serializers.CharField(allow_blank=True, help_text="The name NVML reports.")
    model = nullable(serializers.CharField, help_text="GPU model of the inventory, when known.")
    power_limit_w = nullable(serializers.FloatField)
    pcie_gen = nullable(serializers.IntegerField)
    pcie_width = nullable(serializers.IntegerField)
    pci_bus_id = serializers.CharField(allow_blank=True, help_text="PCI address, e.g. 00000000:3B:00.0.")
    mig = serializers.BooleanField()
    holder = serializers.SerializerMethodField(help_text="Who has booked it now and until when, or null.")
    health = serializers.SerializerMethodField(
        help_text="Why it needs an admin's look, worst first: {label, why} (remap failed or pending, last burn-in "
        "failed); empty when nothing is known. Read when the page or snapshot is built, not carried by live updates."
    )

    @extend_schema_field(HealthMarkSerializer(many=True))
    def get_health(self, gpu: Mapping) -> list[dict]:
        return health_marks(gpu, self.context.get("burnins", {}).get(gpu["uuid"]))

    def get_holder(self, gpu: Mapping) -> dict | None:
        return self.context.get("holders", {}).get(gpu["uuid"])


class NodeStatusSerializer(serializers.Serializer):
    """A node's status: what a live node update carries."""

    hostname = serializers.CharField()
    status = serializers.ChoiceField(choices=NodeStatus.choices)
    status_label = serializers.SerializerMethodField()
    colour = serializers.SerializerMethodField()

    def get_status_label(self, node: Mapping) -> str:
        return NodeStatus(node["status"]).label

    def get_colour(self, node: Mapping) -> str:
        return NodeStatus(node["status"]).colour


class NodeSerializer(NodeStatusSerializer):
    """A node of the inventory with its GPUs and their latest state."""

    last_seen = nullable(serializers.FloatField, help_text="UNIX seconds; null when never seen.")
    labels = serializers.ListField(child=serializers.CharField())
    driver_version = serializers.CharField(allow_blank=True)
    cuda_version = serializers.CharField(allow_blank=True)
    gpus = GPUSerializer(many=True)


class FleetSummarySerializer(serializers.Serializer):
    """Counts and totals over the whole fleet."""

    gpus = serializers.IntegerField()
    busy = serializers.IntegerField(help_text="Reporting GPUs at 5 % utilization or more.")
    idle = serializers.IntegerField(help_text="Reporting GPUs below 5 % utilization.")
    offline = serializers.IntegerField(help_text="GPUs on offline nodes or without any sample.")
    utilization = nullable(serializers.FloatField, help_text="Mean utilization of reporting GPUs, %.")
    power_w = serializers.FloatField(help_text="Total power draw of reporting GPUs.")


class FleetSerializer(serializers.Serializer):
    """The whole fleet: a summary and every node with its GPUs."""

    summary = FleetSummarySerializer()
    nodes = NodeSerializer(many=True)
