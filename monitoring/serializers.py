"""The GPU and node payloads of the JSON API, also sent to browsers over /ws/live/.

Every serializer here reads a plain mapping: the live path hands it the update dicts of the ingest,
the API hands it records built from the database rows (monitoring/fleet_state.py), so a tile on the page
and an item of /api/fleet/ are the same bytes. A missing value stays null ("N/A"), never zero.
"""

from collections.abc import Mapping

from rest_framework import serializers

from fleet.choices import NodeStatus, ThrottleReason, UtilizationBand
from monitoring.agent.metrics import CLOCKS_EVENT_REASONS

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


def owner_of(os_user: str | None, owners: Mapping[str, str]) -> str | None:
    return owners.get(os_user) if os_user else None


def nullable(field_class, **kwargs):
    return field_class(allow_null=True, required=False, default=None, **kwargs)


class ProcessSerializer(serializers.Serializer):
    """A process on a GPU, with the researcher who owns its OS user (null when nobody is known)."""

    pid = serializers.IntegerField()
    user = serializers.CharField(allow_blank=True, help_text="OS username on the node.")
    owner = serializers.SerializerMethodField(help_text="Researcher's username, or null when the OS user is unknown.")
    name = serializers.CharField(allow_blank=True)
    cmdline = serializers.CharField(allow_blank=True)
    mem_used_mib = nullable(serializers.FloatField)
    sm_util = nullable(serializers.FloatField)
    started_at = nullable(serializers.FloatField, help_text="UNIX seconds.")

    def get_owner(self, process: Mapping) -> str | None:
        return owner_of(process.get("user"), self.context.get("owners", {}))


class GPUStateSerializer(serializers.Serializer):
    """The latest state of one GPU: what a live update carries."""

    uuid = serializers.CharField()
    node = serializers.CharField(help_text="Hostname of the node.")
    index = serializers.IntegerField()
    ts = nullable(serializers.FloatField, help_text="Time of the latest sample, UNIX seconds; null before any.")
    util_gpu = nullable(serializers.FloatField, help_text="%")
    util_mem = nullable(serializers.FloatField, help_text="%")
    mem_used_mib = nullable(serializers.FloatField)
    memory_total_mib = nullable(serializers.IntegerField)
    temp_c = nullable(serializers.FloatField)
    power_w = nullable(serializers.FloatField)
    sm_clock_mhz = nullable(serializers.FloatField)
    mem_clock_mhz = nullable(serializers.FloatField)
    fan_pct = nullable(serializers.FloatField)
    pcie_tx_kib_s = nullable(serializers.FloatField)
    pcie_rx_kib_s = nullable(serializers.FloatField)
    ecc_volatile = nullable(serializers.IntegerField)
    clocks_event_reasons = nullable(serializers.IntegerField, help_text="NVML clocks-event bitmask.")
    band = serializers.SerializerMethodField(help_text="Utilization band: unknown, idle, light, busy or full.")
    throttle = serializers.SerializerMethodField(help_text="Throttle reasons: thermal, power, hw_slowdown.")
    users = serializers.SerializerMethodField(help_text="Owners (or OS users where unknown) of its processes.")
    processes = ProcessSerializer(many=True, required=False, default=list)

    def get_band(self, state: Mapping) -> str:
        return UtilizationBand.of(state.get("util_gpu")).value

    def get_throttle(self, state: Mapping) -> list[str]:
        return throttle_reasons(state.get("clocks_event_reasons"))

    def get_users(self, state: Mapping) -> list[str]:
        owners = self.context.get("owners", {})
        names = {owner_of(p.get("user"), owners) or p.get("user") for p in state.get("processes") or []}
        return sorted(name for name in names if name)


class GPUSerializer(GPUStateSerializer):
    """A GPU of the inventory with its latest state."""

    name = serializers.CharField(allow_blank=True, help_text="The name NVML reports.")
    model = nullable(serializers.CharField, help_text="GPU model of the inventory, when known.")
    power_limit_w = nullable(serializers.FloatField)
    pcie_gen = nullable(serializers.IntegerField)
    pcie_width = nullable(serializers.IntegerField)
    mig = serializers.BooleanField()


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
