"""GPU time through the real ingest: samples an agent replays late are still counted, exactly once."""

import time
from datetime import UTC, datetime

import pytest
from channels.db import database_sync_to_async

from monitoring.costs.models import UsageHour
from monitoring.costs.rollup import rollup_usage
from monitoring.storage.models import RollupProgress
from tests.support.ingest import stream

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def fold():
    rollup_usage(datetime.now(UTC))
    return sum(UsageHour.objects.values_list("gpu_seconds", flat=True)), RollupProgress.objects.get(table="usage")


@database_sync_to_async
def usage_progress():
    return RollupProgress.objects.get(table="usage")


async def test_a_late_replay_is_folded_into_minutes_already_done(agent):
    base = (time.time() // 60 - 30) * 60  # 30 minutes ago, on a minute
    await agent.start(gpus=1)
    try:
        seq = await stream(agent, base, 10 * 60, util=90, seq=0, started_at=base - 3600)
        counted, progress = await fold()
        assert counted == 600  # 60 samples, 10 s each (the tests' agents sample every 10 s)
        # A reconnecting agent replays what it buffered: the ten minutes after, now 10 to 20 minutes old.
        await stream(agent, base + 10 * 60, 10 * 60, util=90, seq=seq, started_at=base - 3600)
        marked = await usage_progress()
    finally:
        await agent.stop()
    assert marked.late_since is not None and marked.late_since < progress.done_until
    counted, progress = await fold()
    assert counted == 1200 and progress.late_since is None
    counted_again, _ = await fold()
    assert counted_again == 1200
