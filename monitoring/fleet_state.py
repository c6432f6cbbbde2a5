"""The fleet's latest state read from the database, as the records the serializers take."""

from collections.abc import Iterable

from django.db.models import Prefetch, QuerySet

from fleet.choices import NodeStatus, UtilizationBand
from fleet.models import GPU, Node
from fleet.owners import owners_by_os_username
from monitoring.serializers import FleetSummarySerializer, GPUSerializer, NodeSerializer

STATE_FIELDS = (
    "util_gpu",
    "util_mem",
    "mem_used_mib",
    "temp_c",
    "power_w",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "fan_pct",
    "pcie_tx_kib_s",
    "pcie_rx_kib_s",
    "ecc_volatile",
    "clocks_event_reasons",
)


def unix(moment) -> float | None:
    return moment.timestamp() if moment else None


def gpu_record(gpu: GPU, hostname: str) -> dict:
    """A GPU row as the mapping the serializers read (the shape of the ingest's live updates)."""
    record = {field: getattr(gpu, field) for field in STATE_FIELDS}
    record.update(
        uuid=gpu.uuid,
        node=hostname,
        index=gpu.index,
        ts=unix(gpu.last_sample_at),
        memory_total_mib=gpu.memory_total_mib,
        processes=gpu.processes or [],
        name=gpu.name,
        model=gpu.model.name if gpu.model else None,
        power_limit_w=gpu.power_limit_w,
        pcie_gen=gpu.pcie_gen,
        pcie_width=gpu.pcie_width,
        mig=gpu.mig,
    )
    return record


def node_record(node: Node) -> dict:
    return {
        "hostname": node.hostname,
        "status": node.status,
        "last_seen": unix(node.last_seen),
        "labels": node.labels or [],
        "driver_version": node.driver_version,
        "cuda_version": node.cuda_version,
        "gpus": [gpu_record(gpu, node.hostname) for gpu in node.gpus.all()],
    }


def nodes_with_gpus(hostname: str | None = None, gpu_uuid: str | None = None) -> QuerySet:
    """Nodes with their GPUs in two queries; narrowed to one node, or to one GPU and its node."""
    gpus = GPU.objects.select_related("model").order_by("index")
    nodes = Node.objects.order_by("hostname")
    if hostname is not None:
        nodes = nodes.filter(hostname=hostname)
    if gpu_uuid is not None:
        gpus = gpus.filter(uuid=gpu_uuid)
        nodes = nodes.filter(gpus__uuid=gpu_uuid)
    return nodes.prefetch_related(Prefetch("gpus", queryset=gpus))


def os_users(gpus: Iterable[dict]) -> set[str]:
    return {p["user"] for gpu in gpus for p in gpu.get("processes") or [] if p.get("user")}


def owner_names(gpus: Iterable[dict]) -> dict[str, str]:
    """OS username → researcher's username, for the processes on these GPUs."""
    return {name: user.get_username() for name, user in owners_by_os_username(os_users(gpus)).items()}


def summarize(nodes: list[dict]) -> dict:
    """Busy, idle and offline GPUs, mean utilization and total power, from serialized nodes."""
    busy = idle = offline = 0
    utils, power = [], 0.0
    for node in nodes:
        for gpu in node["gpus"]:
            if node["status"] == NodeStatus.OFFLINE or gpu["ts"] is None:
                offline += 1
                continue
            if gpu["band"] == UtilizationBand.IDLE:
                idle += 1
            elif gpu["band"] != UtilizationBand.UNKNOWN:
                busy += 1
            if gpu["util_gpu"] is not None:
                utils.append(gpu["util_gpu"])
            power += gpu["power_w"] or 0.0
    total = sum(len(node["gpus"]) for node in nodes)
    utilization = round(sum(utils) / len(utils), 1) if utils else None
    return {"gpus": total, "busy": busy, "idle": idle, "offline": offline, "utilization": utilization, "power_w": power}


def serialize_nodes(nodes: Iterable[Node]) -> list[dict]:
    records = [node_record(node) for node in nodes]
    owners = owner_names(gpu for record in records for gpu in record["gpus"])
    return NodeSerializer(records, many=True, context={"owners": owners}).data


def fleet_payload(nodes: Iterable[Node] | None = None) -> dict:
    """The whole fleet as /api/fleet/ returns it and the Fleet page's snapshot."""
    serialized = serialize_nodes(nodes_with_gpus() if nodes is None else nodes)
    return {"summary": FleetSummarySerializer(summarize(serialized)).data, "nodes": serialized}


def gpu_payload(gpu: GPU) -> dict:
    record = gpu_record(gpu, gpu.node.hostname)
    return GPUSerializer(record, context={"owners": owner_names([record])}).data
