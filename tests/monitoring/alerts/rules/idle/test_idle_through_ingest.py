"""End to end: an agent streams a forgotten process through the real ingest; the rules find it and tell its owner."""

import time
from datetime import UTC, datetime

import pytest
from channels.db import database_sync_to_async

from monitoring.alerts import engine
from monitoring.alerts.choices import AlertKind
from monitoring.alerts.models import Alert
from monitoring.notify.choices import TransportKind
from monitoring.notify.from_events import dispatch_pending
from monitoring.notify.models import Notification
from monitoring.storage import rollups
from tests.support.ingest import stream

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def evaluate_at(moment: float):
    now = datetime.fromtimestamp(moment, tz=UTC)
    rollups.rollup_minutes(now)
    engine.evaluate(now)
    dispatch_pending()
    return list(Alert.objects.filter(kind=AlertKind.IDLE_PROCESS).select_related("owner"))


async def test_a_forgotten_process_streamed_by_an_agent_raises_one_alert_for_its_owner(agent):
    base = (time.time() // 60 - 40) * 60  # 40 minutes ago, on a minute
    started_at = base - 3 * 86400
    await agent.start(gpus=1)
    try:
        await stream(agent, base, 32 * 60, util=0, seq=0, started_at=started_at)
    finally:
        await agent.stop()
    assert await evaluate_at(base + 29 * 60) == []
    (alert,) = await evaluate_at(base + 31 * 60)
    assert alert.owner.username == "alice" and alert.details["pid"] == 31337
    assert len(await evaluate_at(base + 32 * 60)) == 1
    in_app = Notification.objects.filter(transport=TransportKind.IN_APP)
    told = await database_sync_to_async(lambda: list(in_app.values_list("user__username", flat=True)))()
    assert told == ["alice"]
