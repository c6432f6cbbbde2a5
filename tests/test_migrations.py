"""The models and the migrations agree, including choices read from registries (strategies, transports), and a
database made before a move keeps its values through it."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


@pytest.mark.django_db
def test_no_model_change_lacks_a_migration():
    try:
        call_command("makemigrations", "--check", "--dry-run", verbosity=0)
    except SystemExit as exit:
        pytest.fail(f"makemigrations --check found changes without a migration (exit {exit.code})")


# Where the schema stood before the inventory kept identity only: the GPU row held its latest state, and
# bookings, API tokens and budgets lived in the inventory app (label fleet).
BEFORE_THE_MOVE = [
    ("fleet", "0010_gpu_table_fillfactor"),
    ("monitoring", "0018_group_across_evaluations"),
    ("training", "0007_run_checkpoints_and_resume"),
    ("accounts", None),
    ("reservations", None),
]


def migrate_to(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state([target for target in targets if target[1]]).apps


def latest_nodes():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def populate_as_before(old):
    """A GPU with its latest state and NVLink figures, a booking, an API token and a budget, kept the old way."""
    User = old.get_model("auth", "User")
    Node, GPU = old.get_model("fleet", "Node"), old.get_model("fleet", "GPU")
    user = User.objects.create(username="alice")
    node = Node.objects.create(hostname="gpu-old")
    gpu = GPU.objects.create(node=node, index=0, uuid="GPU-old-0", last_sample_at=SAMPLED, processes=PROCESSES, **STATE)
    old.get_model("fleet", "NvLinkState").objects.create(gpu=gpu, ts=SAMPLED.timestamp(), links=LINKS)
    old.get_model("fleet", "Reservation").objects.create(gpu=gpu, user=user, start=SAMPLED, end=SAMPLED + HOUR)
    old.get_model("fleet", "ApiToken").objects.create(user=user, name="deploy", key_hash="h" * 64, prefix="abc")
    old.get_model("fleet", "UserBudget").objects.create(user=user, monthly_budget=Decimal("250.00"))


SAMPLED = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)
STATE = {"util_gpu": 97.0, "mem_used_mib": 60211.0, "temp_c": 71.0, "power_w": 512.3, "ecc_volatile": 3, "xid_last": 79}
PROCESSES = [{"pid": 4242, "user": "alice", "name": "python", "mem_used_mib": 59000, "run": None}]
LINKS = [{"tx_kib_s": 1200, "rx_kib_s": 88000}, {"tx_kib_s": None, "rx_kib_s": None}]


@pytest.mark.django_db(transaction=True)
def test_a_database_from_before_the_move_keeps_every_value():
    from accounts.models import ApiToken
    from monitoring.costs.models import UserBudget
    from monitoring.storage.models import GPUState, NvLinkState
    from reservations.models import Reservation

    latest = latest_nodes()
    try:
        populate_as_before(migrate_to(BEFORE_THE_MOVE))
    finally:
        migrate_to(latest)

    state = GPUState.objects.get(gpu__uuid="GPU-old-0")
    assert {key: getattr(state, key) for key in STATE} == STATE
    assert (state.last_sample_at, state.processes) == (SAMPLED, PROCESSES)
    assert NvLinkState.objects.get(gpu__uuid="GPU-old-0").kept() == {"ts": SAMPLED.timestamp(), "links": LINKS}
    booking = Reservation.objects.get()
    assert (booking.gpu.uuid, booking.user.username, booking.end - booking.start) == ("GPU-old-0", "alice", HOUR)
    assert ApiToken.objects.get().name == "deploy"
    assert UserBudget.objects.get().monthly_budget == Decimal("250.00")


@pytest.mark.django_db(transaction=True)
def test_runs_from_before_uuids_keep_their_run_id_directories_and_each_gets_a_uuid():
    from training.models import Run
    from training.run_files import checkpoint_dirs

    latest = latest_nodes()
    try:
        old = migrate_to([("training", "0010_worker_reports_its_environments")])
        owner = old.get_model("auth", "User").objects.create(username="alice")
        OldRun = old.get_model("training", "Run")
        named = OldRun.objects.create(owner=owner, name="a", workload="digits_cnn", strategy="single")
        named.checkpoint_dir = f"run-{named.pk}"
        named.save()
        blank = OldRun.objects.create(owner=owner, name="b", workload="digits_cnn", strategy="single")
    finally:
        migrate_to(latest)

    runs = list(Run.objects.filter(pk__in=[named.pk, blank.pk]).order_by("pk"))
    assert [run.files_name for run in runs] == [f"run-{named.pk}", f"run-{blank.pk}"]
    assert [checkpoint_dirs.run_dir(run).name for run in runs] == [f"run-{named.pk}", f"run-{blank.pk}"]
    assert runs[0].uuid and runs[1].uuid and runs[0].uuid != runs[1].uuid
    fresh = Run.objects.create(owner_id=runs[0].owner_id, name="c", workload="digits_cnn", strategy="single")
    assert fresh.files_name == f"run-{fresh.uuid}"
