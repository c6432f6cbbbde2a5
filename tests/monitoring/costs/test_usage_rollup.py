"""GPU time comes from measured process samples; each sample is one sampling interval of GPU time.

The rollup folds minutes that closed over a minute ago, so each test runs it two minutes after its data.
"""

from datetime import timedelta
from decimal import Decimal

from django.db import connection, transaction

from inventory.models import Node
from monitoring.costs.models import UsageHour, UsageMinute
from monitoring.costs.rollup import MINUTES_SQL, rollup_usage
from monitoring.storage.models import RollupProgress
from tests.support.monitoring import T0
from tests.support.telemetry import add_gpu, process, stream

MIN = timedelta(minutes=1)


def half_idle(ts):
    return 0 if ts < T0 + 15 * MIN else 90


def test_thirty_minutes_of_samples_are_half_a_gpu_hour(cast, gpu):
    stream(gpu, T0, T0 + 30 * MIN, util=half_idle, processes=[process(1, "alice")])
    rollup_usage(T0 + 32 * MIN)
    row = UsageHour.objects.get()
    assert (row.user, row.project, row.os_user) == (cast["owner"], cast["project"], "alice")
    assert row.gpu_seconds == 1800 and row.idle_seconds == 900
    assert row.rate == Decimal("2.500")  # the A100 80GB's price
    assert row.cost == Decimal("1.2500") and row.idle_cost == Decimal("0.6250")


def test_a_node_rate_overrides_the_model_price(cast, gpu):
    Node.objects.filter(pk=gpu.node_id).update(cost_per_gpu_hour=Decimal("1.000"))
    stream(gpu, T0, T0 + 30 * MIN, util=90, processes=[process(1, "alice")])
    rollup_usage(T0 + 32 * MIN)
    assert UsageHour.objects.get().cost == Decimal("0.5000")


def test_two_processes_of_one_user_on_one_gpu_count_once(cast, gpu):
    stream(gpu, T0, T0 + 6 * MIN, util=90, processes=[process(1, "alice"), process(2, "alice")])
    rollup_usage(T0 + 8 * MIN)
    assert UsageHour.objects.get().gpu_seconds == 360


def test_two_users_sharing_a_gpu_each_pay_for_the_time(cast, gpu):
    stream(gpu, T0, T0 + 6 * MIN, util=90, processes=[process(1, "alice"), process(2, "bob")])
    rollup_usage(T0 + 8 * MIN)
    assert dict(UsageHour.objects.values_list("os_user", "gpu_seconds")) == {"alice": 360, "bob": 360}


def test_hours_are_split_and_rerunning_changes_nothing(cast, gpu):
    stream(gpu, T0 - 10 * MIN, T0 + 20 * MIN, util=90, processes=[process(1, "alice")])
    rollup_usage(T0 + 22 * MIN)
    rollup_usage(T0 + 22 * MIN)
    rollup_usage(T0 + 23 * MIN)
    by_hour = dict(UsageHour.objects.values_list("bucket", "gpu_seconds"))
    assert by_hour == {T0 - timedelta(hours=1): 600, T0: 1200}


def test_a_late_sample_of_the_previous_hour_is_counted(cast, gpu):
    stream(gpu, T0 - 30 * MIN, T0 - 20 * MIN, util=90, processes=[process(1, "alice")])
    rollup_usage(T0 + 5 * MIN)
    stream(gpu, T0 - 20 * MIN, T0 - 10 * MIN, util=90, processes=[process(1, "alice")])  # replayed late...
    RollupProgress.objects.filter(table="usage").update(late_since=T0 - 20 * MIN)  # ...as the ingest marks it
    rollup_usage(T0 + 6 * MIN)
    assert UsageHour.objects.get(bucket=T0 - timedelta(hours=1)).gpu_seconds == 1200
    assert RollupProgress.objects.get(table="usage").late_since is None


def test_each_run_folds_only_the_new_minutes(cast, gpu):
    stream(gpu, T0, T0 + 10 * MIN, util=90, processes=[process(1, "alice")])
    rollup_usage(T0 + 5 * MIN)
    assert UsageHour.objects.get().gpu_seconds == 180  # minutes 0–2: 3 and 4 may still fill in
    rollup_usage(T0 + 12 * MIN)
    assert UsageHour.objects.get().gpu_seconds == 600
    assert RollupProgress.objects.get(table="usage").done_until == T0 + 10 * MIN


def test_an_os_user_without_an_account_is_kept_by_name(cast, gpu):
    stream(gpu, T0, T0 + MIN, util=0, processes=[process(1, "carol")])
    rollup_usage(T0 + 3 * MIN)
    row = UsageHour.objects.get()
    assert (row.os_user, row.user, row.project) == ("carol", None, None)


def test_a_gpu_without_a_price_costs_na_not_zero(cast):
    gpu = add_gpu("gpu-x", 0)
    type(gpu).objects.filter(pk=gpu.pk).update(model=None)
    stream(gpu, T0, T0 + MIN, util=90, processes=[process(1, "alice")])
    rollup_usage(T0 + 3 * MIN)
    row = UsageHour.objects.get()
    assert row.gpu_seconds == 60 and row.cost is None


def usage_totals():
    rows = UsageHour.objects.order_by("gpu", "bucket", "os_user")
    return [(r.gpu_id, r.bucket, r.os_user, r.gpu_seconds, r.idle_seconds, r.cost, r.idle_cost) for r in rows]


def busy_then_idle(ts):
    return 0 if (ts - T0) // MIN % 7 < 3 else 90


def test_folding_minute_by_minute_gives_the_totals_of_one_full_recomputation(cast, gpu):
    other = add_gpu("gpu-02", 0)
    stream(gpu, T0 - 20 * MIN, T0 + 25 * MIN, util=busy_then_idle, processes=[process(1, "alice"), process(2, "bob")])
    stream(other, T0 - 5 * MIN, T0 + 25 * MIN, util=0, processes=[process(3, "alice")])
    for minute in range(-18, 28):
        rollup_usage(T0 + minute * MIN)
    incremental = usage_totals()
    UsageHour.objects.all().delete()
    UsageMinute.objects.all().delete()
    RollupProgress.objects.filter(table="usage").delete()
    rollup_usage(T0 + 27 * MIN)
    assert incremental == usage_totals()
    assert sum(row[3] for row in incremental) == (45 + 45 + 30) * 60  # alice and bob on one GPU, alice on the other


def test_folding_the_same_minutes_again_adds_nothing(cast, gpu):
    stream(gpu, T0, T0 + 20 * MIN, util=busy_then_idle, processes=[process(1, "alice")])
    rollup_usage(T0 + 22 * MIN)
    before = usage_totals()
    RollupProgress.objects.filter(table="usage").update(late_since=T0)  # as if a replay touched every minute
    rollup_usage(T0 + 23 * MIN)
    assert usage_totals() == before
    assert before[0][3] == 1200


def test_a_fold_reads_process_samples_by_time_not_the_whole_day(cast, gpu):
    """Each run must cost what its new minutes cost, however much of the day the partition already holds."""
    stream(gpu, T0, T0 + 5 * MIN, util=90, processes=[process(1, "alice")])
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny test tables: ask whether an index on ts exists
        cursor.execute("EXPLAIN " + MINUTES_SQL.split("ON CONFLICT")[0], minute_params(T0 + 2 * MIN))
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "Seq Scan on monitoring_processsample" not in plan


def minute_params(start):
    return {"start": start, "end": start + MIN, "util": 5, "memory": 1024}
