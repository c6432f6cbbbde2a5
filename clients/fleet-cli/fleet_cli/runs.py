"""run, runs, show, cancel, resume: training runs through /api/runs/.

`run` sends the researcher's command (workload "command": an argument list, never a shell string) or a
built-in workload; with `--gpus N` it picks N GPUs free for the user now, by the same rule as
`fleet status --free`, and the server checks them again before anything is queued.
"""

from __future__ import annotations

from .client import Api, Refused, logged_in, my_name
from .follow import follow, wait_until_ended
from .gpus import fleet_gpus, free_for
from .output import emit_json, fields, local_time, table

RUNS = "/api/runs/"


def run(args) -> int | None:
    body = launch_body(args)
    api = logged_in()
    if not body.get("booking") and not body.get("gpus"):
        body["gpus"] = pick_gpus(api, args)
    made = api.post(RUNS, body)
    if args.output == "json" and not args.follow:
        return emit_json(made)
    where = ", ".join(f"{gpu['node']}:{gpu['index']}" for gpu in made["gpus"]) or "its booking's GPUs"
    print(f"Run #{made['id']} {made['status']} on {where}. Follow it with: fleet logs {made['id']} -f")
    return follow(api, made["id"]) if args.follow else None


def launch_body(args) -> dict:
    """The launch request, checked here only for what the API cannot see (an empty command)."""
    if args.command is not None and args.workload:
        raise Refused("Give a command after -- or --workload, not both.")
    if not args.workload and not args.command:
        raise Refused("Give the command to run after --, e.g. fleet run --gpus 2 -- python train.py.")
    body = {"name": args.run_name, "gpus": list(args.gpu)}
    if args.workload:
        body.update(workload=args.workload, hyperparameters=dict(args.param))
    else:
        body.update(workload="command", command=args.command, variables=dict(args.env))
        body.update(environment_of(args))
        body.update({key: value for key, value in (("workdir", args.workdir), ("setup", args.setup)) if value})
    for key in ("strategy", "booking", "project"):
        if getattr(args, key):
            body[key] = getattr(args, key)
    return body


def environment_of(args) -> dict:
    for kind, ref in (("venv", args.venv), ("conda", args.conda), ("image", args.image)):
        if ref:
            return {"env_kind": kind, "env_ref": ref}
    return {}


def pick_gpus(api: Api, args) -> list[str]:
    """N free GPUs on each of K nodes (one node unless --nodes), fullest nodes first."""
    per_node, nodes = args.gpus or 1, args.nodes
    me = my_name(api)
    free: dict[str, list[str]] = {}
    for gpu in fleet_gpus(api):
        model_ok = not args.model or args.model.lower() in (str(gpu.get("model")).lower(), str(gpu.get("name")).lower())
        if model_ok and (not args.node or gpu["node"] == args.node) and free_for(gpu, me):
            free.setdefault(gpu["node"], []).append(gpu["uuid"])
    enough = sorted((uuids for uuids in free.values() if len(uuids) >= per_node), key=len, reverse=True)
    if len(enough) < nodes:
        what = f"{per_node} free GPU{'s' if per_node > 1 else ''}" + (f" of model {args.model}" if args.model else "")
        where = f" on {args.node}" if args.node else ""
        raise Refused(f"gpus: no {nodes} node(s) have {what}{where} for you now (see fleet status --free).")
    return [uuid for uuids in enough[:nodes] for uuid in uuids[:per_node]]


def runs(args) -> None:
    found = logged_in().every(RUNS, show="mine" if args.mine else None, status=args.status)
    if args.output == "json":
        return emit_json(found)
    rows = [
        [r["id"], r["name"], r["owner"], r["status"], what_runs(r), gpu_list(r), local_time(r["created"])]
        for r in found
    ]
    table(rows, ["RUN", "NAME", "OWNER", "STATUS", "WHAT", "GPUS", "CREATED"], empty="No run matches.")


def show(args) -> None:
    found = logged_in().get(f"{RUNS}{args.run}/")
    if args.output == "json":
        return emit_json(found)
    fields(run_facts(found))


def run_facts(r: dict) -> list[tuple[str, object]]:
    cost = r.get("cost") or {}
    progress = r.get("progress") or {}
    environment = r.get("environment") or {}
    facts = [
        ("Run", f"#{r['id']} {r['name']}"),
        ("Owner", f"{r['owner']} ({r['project'] or 'no project'})"),
        ("Status", r["status"] + (f" (exit status {r['exit_code']})" if r.get("exit_code") is not None else "")),
        ("Waiting for", r.get("waiting_for") or "-"),
        ("Error", r.get("error") or "-"),
        ("Runs", what_runs(r)),
        ("Environment", f"{r.get('env_kind') or 'fleet'} {r.get('env_ref') or ''}".strip()),
        ("Strategy", f"{r['strategy']}, {r['processes']} process(es) per node"),
        ("GPUs", gpu_list(r) or "-"),
        ("Created", local_time(r["created"])),
        ("Started", local_time(r.get("started_at"))),
        ("Finished", local_time(r.get("finished_at"))),
        ("Progress", ", ".join(f"{k} {v}" for k, v in progress.items() if v is not None) or "-"),
        ("Cost", f"{cost.get('so_far')} USD, {cost.get('gpu_hours')} GPU-hours"),
    ]
    if r.get("efficiency"):
        facts.append(("Efficiency", r["efficiency"]))
    for node in r.get("nodes") or []:
        exit_code = f", exit {node['exit_code']}" if node.get("exit_code") is not None else ""
        facts.append((f"Node {node['rank']}", f"{node['hostname']} {node['status']}, pid {node.get('pid')}{exit_code}"))
    record = ["python", "torch", "cuda", "driver", "host", "git_commit"]
    facts.append(("Recorded", ", ".join(f"{k} {environment[k]}" for k in record if environment.get(k)) or "-"))
    return facts


def what_runs(r: dict) -> str:
    if r.get("command"):
        return " ".join(r["command"])
    return r.get("script") or r["workload"]


def gpu_list(r: dict) -> str:
    return ", ".join(f"{gpu['node']}:{gpu['index']}" for gpu in r.get("gpus") or [])


def cancel(args) -> None:
    api = logged_in()
    asked = api.post(f"{RUNS}{args.run}/cancel/")
    if args.no_wait:
        print(f"Run #{asked['id']} is being cancelled.")
        return
    from .follow import ending

    print(ending(wait_until_ended(api, args.run)))


def resume(args) -> None:
    made = logged_in().post(f"{RUNS}{args.run}/resume/")
    if args.output == "json":
        return emit_json(made)
    step = (made.get("checkpoint") or {}).get("step")
    print(f"Run #{made['id']} resumes #{args.run}" + (f" from step {step}" if step else "") + f": {made['status']}.")
