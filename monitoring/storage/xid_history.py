"""XID errors as events: each rise of a GPU's `xid_count` between two of its samples, with the code it left.

The agent sends a counter and the latest code (monitoring/agent/xid.py), so events are read back from
the raw samples while they are kept, and from the minute rollups (the count's highest value and the
highest code of each minute) for the older part of a range.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import connection

RAW = "SELECT ts, xid_count, xid_last FROM monitoring_gpusample WHERE gpu_id = %s AND ts >= %s AND ts < %s"
MINUTES = """
    SELECT bucket, xid_count_max, xid_last_max FROM monitoring_gpuminute
    WHERE gpu_id = %s AND bucket >= %s AND bucket < %s
"""
RISES = """
    SELECT at, count - previous, code FROM (
        SELECT at, count, code, lag(count) OVER (ORDER BY at) AS previous
        FROM ({readings}) AS readings (at, count, code) WHERE count IS NOT NULL
    ) counted
    WHERE count > previous ORDER BY at
"""
OLDEST_RAW = "SELECT min(ts) FROM monitoring_gpusample WHERE gpu_id = %s"


@dataclass(frozen=True)
class XidEvent:
    at: datetime
    errors: int  # how many arrived since the reading before (more than one in a storm)
    code: int  # the latest one's code


def xid_events(gpu_id: int, start: datetime, end: datetime) -> list[XidEvent]:
    """XID errors of one GPU within [start, end), oldest first; a counter going down (agent restart) is not one."""
    with connection.cursor() as cursor:
        cursor.execute(OLDEST_RAW, [gpu_id])
        oldest_raw = cursor.fetchone()[0] or end
        split = min(max(start, oldest_raw), end)
        cursor.execute(RISES.format(readings=f"{MINUTES} UNION ALL {RAW}"), [gpu_id, start, split, gpu_id, split, end])
        return [XidEvent(at, int(errors), int(code)) for at, errors, code in cursor.fetchall()]
