"""find, book, bookings, unbook: reservations through /api/reservations/, which refuses any overlap itself."""

from __future__ import annotations

from datetime import datetime

from .client import Refused, logged_in
from .output import emit_json, local_time, table

BOOKINGS = "/api/reservations/"


def find(args) -> None:
    count, model = args.want
    hours = args.length.total_seconds() / 3600
    query = {"model": model, "count": count, "hours": f"{hours:g}", "node": args.node}
    slots = logged_in().every(BOOKINGS + "find/", **query)
    if args.before:
        slots = [slot for slot in slots if datetime.fromisoformat(slot["end"]) <= args.before]
    if args.output == "json":
        return emit_json(slots)
    rows = [[local_time(slot["start"]), local_time(slot["end"]), gpu_labels(slot["gpus"])] for slot in slots]
    table(rows, ["FROM", "TO", "GPUS"], empty=f"No window of {count} × {model} for {hours:g} h was found.")


def book(args) -> None:
    if bool(args.want) == bool(args.gpu):
        raise Refused("Give COUNTxMODEL or --gpu UUID (one or more), not both and not neither.")
    start = args.start or datetime.now().astimezone()
    end = args.until or start + args.length
    body = {"start": start.isoformat(), "end": end.isoformat(), "purpose": args.purpose}
    if args.gpu:
        body["gpus"] = args.gpu
    else:
        body["count"], body["model"] = args.want
    if args.node:
        body["node"] = args.node
    booking = logged_in().post(BOOKINGS, body)
    if args.output == "json":
        return emit_json(booking)
    print(f"Booked {gpu_labels(row['gpu'] for row in booking['reservations'])}", end=" ")
    print(f"from {local_time(booking['start'])} to {local_time(booking['end'])}: booking {booking['id']}.")


def bookings(args) -> None:
    found = logged_in().every(BOOKINGS)
    if args.output == "json":
        return emit_json(found)
    rows = [
        [
            b["id"],
            b["status"],
            local_time(b["start"]),
            local_time(b["end"]),
            gpu_labels(r["gpu"] for r in b["reservations"]),
        ]
        for b in found
    ]
    table(rows, ["ID", "STATUS", "FROM", "TO", "GPUS"], empty="You have no bookings.")


def unbook(args) -> None:
    booking = logged_in().delete(f"{BOOKINGS}{args.booking}/")
    print(f"Booking {booking['id']} is {booking['status']}.")


def gpu_labels(gpus) -> str:
    return ", ".join(f"{gpu['node']}:{gpu['index']} ({gpu.get('model') or '?'})" for gpu in gpus)
