"""status, ps, kill: the fleet's GPUs and the processes on them, as /api/fleet/ reports them."""

from __future__ import annotations

import time

from .client import Api, Refused, logged_in, my_name
from .output import emit_json, gib, local_time, note, percent, table

ONLINE = "online"


def fleet_gpus(api: Api) -> list[dict]:
    """Every GPU with its node's hostname and status and who holds a booking on it now."""
    fleet = api.get("/api/fleet/")
    holders = {row["gpu_uuid"]: row for row in api.every("/api/reservations/holders/")}
    gpus = []
    for node in fleet["nodes"]:
        for gpu in node["gpus"]:
            gpus.append({**gpu, "node_status": node["status"], "holder": holders.get(gpu["uuid"])})
    return gpus


def free_for(gpu: dict, me: str) -> bool:
    """The Fleet page's "free for you now" (reservations/availability.py): an online node's reporting GPU
    that nobody else has booked now and nobody else's processes hold memory on."""
    holder = gpu["holder"]
    return (
        gpu["node_status"] == ONLINE
        and gpu.get("ts") is not None
        and not (holder and holder["user"] != me)
        and all(name == me for name in gpu.get("in_use_by") or [])
    )


def status(args) -> None:
    api = logged_in()
    gpus = [gpu for gpu in fleet_gpus(api) if wanted(gpu, args)]
    if args.free:
        me = my_name(api)
        gpus = [gpu for gpu in gpus if free_for(gpu, me)]
    if args.output == "json":
        return emit_json(gpus)
    rows = [status_row(gpu) for gpu in gpus]
    header = ["NODE", "GPU", "MODEL", "UTIL", "MEM GiB", "TEMP", "USED BY", "BOOKED BY", "UUID"]
    table(rows, header, empty="No GPU matches." if not args.free else "No GPU is free for you now.")


def wanted(gpu: dict, args) -> bool:
    if args.node and gpu["node"] != args.node:
        return False
    return not args.model or args.model.lower() in {str(gpu.get("model")).lower(), str(gpu.get("name")).lower()}


def status_row(gpu: dict) -> list:
    memory = None
    if gpu.get("mem_used_mib") is not None:
        memory = f"{gib(gpu['mem_used_mib'])}/{gib(gpu.get('memory_total_mib')) or '?'}"
    holder = gpu["holder"]
    booked = f"{holder['user']} until {local_time(holder['until'])}" if holder else "-"
    offline = gpu["node_status"] != ONLINE
    used = f"({gpu['node_status']})" if offline else ", ".join(gpu.get("users") or []) or "-"
    temp = None if gpu.get("temp_c") is None else f"{gpu['temp_c']:.0f}C"
    model = gpu.get("model") or gpu.get("name")
    return [gpu["node"], gpu["index"], model, percent(gpu.get("util_gpu")), memory, temp, used, booked, gpu["uuid"]]


def processes(api: Api) -> list[dict]:
    """Every process the GPUs report, one row per process and GPU, with where it runs."""
    rows = []
    for gpu in fleet_gpus(api):
        for process in gpu.get("processes") or []:
            rows.append({**process, "node": gpu["node"], "gpu": gpu["uuid"], "gpu_index": gpu["index"]})
    return rows


def ps(args) -> None:
    api = logged_in()
    user = my_name(api) if args.user == "me" else args.user
    rows = [p for p in processes(api) if (not args.node or p["node"] == args.node)]
    if user:
        rows = [p for p in rows if user in (p.get("owner"), p.get("user"))]
    if args.output == "json":
        return emit_json(rows)
    header = ["PID@NODE", "GPU", "OWNER", "OS USER", "MEM GiB", "SM", "RUN", "STARTED", "COMMAND"]
    table([ps_row(p) for p in rows], header, empty="No process matches.")


def ps_row(p: dict) -> list:
    run = f"#{p['run']}" if p.get("run") else "-"
    started = local_time(p.get("started_at"))
    where = f"{p['pid']}@{p['node']}"
    return [
        where,
        p["gpu_index"],
        p.get("owner"),
        p.get("user"),
        gib(p.get("mem_used_mib")),
        percent(p.get("sm_util")),
        run,
        started,
        p.get("cmdline") or p.get("name"),
    ]


def kill(args) -> None:
    pid, node = args.process
    api = logged_in()
    found = [p for p in processes(api) if p["pid"] == pid and p["node"] == node]
    if not found:
        raise Refused(f"No GPU of {node} reports pid {pid} now (see fleet ps --node {node}).")
    stop = api.post("/api/processes/stop/", {"gpu": found[0]["gpu"], "pid": pid})
    print(stop["detail"])
    if stop.get("run"):
        from .follow import wait_until_ended

        run = wait_until_ended(api, stop["run"], grace_s=stop.get("grace_s"))
        print(f"Run #{run['id']} is {run['status']}.")
    else:
        print(gone_or_not(api, pid, node, stop.get("grace_s") or 10))


def gone_or_not(api: Api, pid: int, node: str, grace_s: float) -> str:
    """Whether the GPUs stopped reporting the process within the grace period and a little more."""
    deadline = time.monotonic() + grace_s + 15
    while time.monotonic() < deadline:
        if not any(p["pid"] == pid and p["node"] == node for p in processes(api)):
            return f"Pid {pid} on {node} is gone."
        time.sleep(1)
    note(f"Pid {pid} is still reported on {node}; the node worker may not have reached it yet.")
    return f"Asked {node} to end pid {pid}."
