"""The fleet's latest state read from the database, as the records the serializers take."""

from collections.abc import Iterable

from inventory.choices import NodeStatus
from inventory.models import GPU, Node
from monitoring.agent.metrics import METRIC_KEYS
from monitoring.health.status import last_burnins
from monitoring.live.choices import UtilizationBand
from monitoring.live.serializers import FleetSummarySerializer, NodeSerializer
from monitoring.storage import latest
from reservations.booking import current_holders
from training.owners import owner_key, owner_usernames

# The metrics a GPU's latest state keeps: every metric of the agent protocol.
STATE_FIELDS = METRIC_KEYS


GPU_COLUMNS = (
    *STATE_FIELDS,
    "node_id",
    "uuid",
    "index",
    "last_sample_at",
    "memory_total_mib",
    "processes",
    "nvlink_ts",
    "nvlink_links",
    "name",
    "model__name",
    "power_limit_w",
    "pcie_gen",
    "pcie_width",
    "pci_bus_id",
    "mig",
)
NODE_COLUMNS = ("id", "hostname", "status", "last_seen", "labels", "driver_version", "cuda_version")


def unix(moment) -> float | None:
    return moment.timestamp() if moment else None


def gpu_record(row: dict, hostname: str) -> dict:
    """A GPU row (from .values()) as the mapping the serializers read: the shape of the ingest's live updates."""
    record = {field: row[field] for field in STATE_FIELDS}
    record.update(
        uuid=row["uuid"],
        node=hostname,
        index=row["index"],
        ts=unix(row["last_sample_at"]),
        memory_total_mib=row["memory_total_mib"],
        processes=row["processes"] or [],
        nvlink=latest.links(row["nvlink_ts"], row["nvlink_links"]),
        name=row["name"],
        model=row["model__name"],
        power_limit_w=row["power_limit_w"],
        pcie_gen=row["pcie_gen"],
        pcie_width=row["pcie_width"],
        pci_bus_id=row["pci_bus_id"],
        mig=row["mig"],
    )
    return record


def node_records(hostname: str | None = None, gpu_uuid: str | None = None) -> list[dict]:
    """Nodes with their GPUs' latest state in two queries; narrowed to one node, or to one GPU and its node.

    Plain rows rather than model instances: a 1,000-GPU fleet is read several times faster.
    """
    nodes = Node.objects.order_by("hostname")
    gpus = GPU.objects.order_by("index")
    if hostname is not None:
        nodes, gpus = nodes.filter(hostname=hostname), gpus.filter(node__hostname=hostname)
    if gpu_uuid is not None:
        nodes, gpus = nodes.filter(gpus__uuid=gpu_uuid), gpus.filter(uuid=gpu_uuid)
    records = {
        row["id"]: {
            "hostname": row["hostname"],
            "status": row["status"],
            "last_seen": unix(row["last_seen"]),
            "labels": row["labels"] or [],
            "driver_version": row["driver_version"],
            "cuda_version": row["cuda_version"],
            "gpus": [],
        }
        for row in nodes.values(*NODE_COLUMNS)
    }
    for row in latest.values(gpus, *GPU_COLUMNS):
        node = records.get(row["node_id"])
        if node is not None:
            node["gpus"].append(gpu_record(row, node["hostname"]))
    return list(records.values())


def owner_keys(gpus: Iterable[dict]) -> set[str]:
    """How the owners of these GPUs' processes are looked up (owners.owner_key): by run, else by OS user."""
    return {key for gpu in gpus for p in gpu.get("processes") or [] if (key := owner_key(p))}


def owner_names(gpus: Iterable[dict]) -> dict[str, str]:
    """Owner key → researcher's username, for the processes on these GPUs."""
    return owner_usernames(owner_keys(gpus))


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


def booking_holders() -> dict[str, dict]:
    """GPU UUID → the researcher whose booking holds it now, and until when (UNIX seconds)."""
    return {
        booking.gpu.uuid: {"user": user.get_username(), "until": booking.end.timestamp()}
        for user, booking in current_holders().values()
    }


def serialize_nodes(records: list[dict]) -> list[dict]:
    owners = owner_names(gpu for record in records for gpu in record["gpus"])
    uuids = [gpu["uuid"] for node in records for gpu in node["gpus"]]
    context = {"owners": owners, "holders": booking_holders(), "burnins": last_burnins(uuids)}
    return NodeSerializer(records, many=True, context=context).data


def fleet_payload(hostname: str | None = None, gpu_uuid: str | None = None) -> dict:
    """The fleet (or one node, or one GPU and its node) as /api/fleet/ returns it and pages draw it."""
    serialized = serialize_nodes(node_records(hostname=hostname, gpu_uuid=gpu_uuid))
    return {"summary": FleetSummarySerializer(summarize(serialized)).data, "nodes": serialized}


def gpu_payload(uuid: str) -> dict | None:
    """One GPU as /api/gpus/<uuid>/ returns it, or None."""
    nodes = fleet_payload(gpu_uuid=uuid)["nodes"]
    return nodes[0]["gpus"][0] if nodes else None
