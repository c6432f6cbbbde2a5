"""GPU time comes from measured process samples; each sample is one sampling interval of GPU time.

The rollup folds minutes that closed over a minute ago, so each test runs it two minutes after its data.
"""

from datetime import timedelta
from decimal import Decimal

from fleet.models import Node
from monitoring.costs.models import UsageHour
from monitoring.costs.rollup import rollup_usage
from monitoring.models import RollupProgress
from tests.monitoring.conftest import T0
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
