"""alerts and costs: what the alerts page and the cost report say, for the terminal."""

from __future__ import annotations

from .client import Refused, logged_in, my_name
from .output import emit_json, local_time, table


def alerts(args) -> None:
    found = logged_in().every("/api/alerts/", status=None if args.all else "open")
    if args.output == "json":
        return emit_json(found)
    rows = [
        [a["id"], a["severity"], a["status"], a["kind"], a.get("owner"), local_time(a["opened_at"]), a["title"]]
        for a in found
    ]
    table(rows, ["ID", "SEVERITY", "STATUS", "KIND", "OWNER", "OPENED", "TITLE"], empty="No alerts.")


def costs(args) -> None:
    api = logged_in()
    report = api.get("/api/costs/", month=args.month)
    lines, label = report["by_user"], "RESEARCHER"
    if args.me:
        me = my_name(api)
        lines = [line for line in lines if line["label"] == me]
    elif args.project:
        lines, label = [line for line in report["by_project"] if line["label"] == args.project], "PROJECT"
        if not lines:
            raise Refused(f"project: {args.project!r} spent nothing in {report['month']}, or is not yours to see.")
    if args.output == "json":
        return emit_json({"month": report["month"], "total": report["total"], "lines": lines})
    print(f"{report['month']}: {report['total']['cost']} USD for {report['total']['gpu_hours']:.1f} GPU-hours in all.")
    rows = [[line["label"], f"{line['gpu_hours']:.1f}", line["cost"], line["idle_cost"]] for line in lines]
    table(rows, [label, "GPU-HOURS", "COST USD", "IDLE USD"], empty="No GPU time this month.")
