"""A node worker's side of a run: claim its share, start the process group, stream, obey cancel, end it.

Called by the Celery task ``training.tasks.run_on_node`` in a node worker (queue ``node.<hostname>``).
Every way out of ``run_share`` ends the processes it started; every failure is written to the run.
"""

import logging
import os
import pwd
import queue
import socket
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from inventory.models import GPU
from training import broadcast, environments, strategies
from training.choices import RunNodeStatus, RunStatus
from training.environments import Environment
from training.environments.base import EnvironmentRefused, Started
from training.models import COMMAND, IllegalTransition, Run, RunLog, RunNode
from training.node import environment, run_as
from training.node.commands import node_argv, setup_argv, strategy_env
from training.node.process import ProcessGroup, adopt_orphans, kill_descendants
from training.node.stream import RunStream
from training.profiling.results import collect as collect_profiles
from training.run_files import artifacts, checkpoint_dirs
from training.serializers import state_payload
from training.variables import redact, secret_values

log = logging.getLogger(__name__)

SETUP_HEADER = "── setup ──"
COMMAND_HEADER = "── command ──"


# After the launcher exits, how long a process it left behind may keep its output open.
LINGER_S = 5.0


class GPUsBusy(Exception):
    """Another run holds one of this share's GPUs; the share waits in the queue."""


class CommandRefused(Exception):
    """A command run may not start on this node: its environment or working directory (the message says why)."""


@dataclass
class Prepared:
    """What this node's processes start with, decided once: the command, its environment, where and as whom."""

    argv: list[str]
    env: dict[str, str]
    cwd: str
    account: run_as.Account | None
    kind: Environment
    started: Started
    setup: list[str]  # the setup step's argument list, wrapped as the command is ([] without one)

    @property
    def starts_as(self) -> run_as.Account | None:
        """Whom the processes start as: the run's account, or the node worker where the kind puts it inside."""
        return None if self.kind.account_inside else self.account


@dataclass
class Control:
    """What the node worker should do, read from the run between batches."""

    status: str
    cancel_requested: bool
    rendezvous: str

    @property
    def stop(self) -> bool:
        return self.cancel_requested or self.status in RunStatus.finished()


def run_share(run_node_id: int, worker: str) -> str:
    """Run this node's share of a run to its end; returns what happened, for the task's result."""
    part = claim(run_node_id, worker)
    if part is None:
        return "skipped: the run is no longer waiting for this node"
    adopt_orphans()
    group = prepared = None
    try:
        run = part.run
        addrs = wait_for_rendezvous(run, part)
        if addrs is None:
            return end_share(part, None, None)
        prepared = prepare(run, part, addrs)
        stream = RunStream(run, part)
        if run.setup:
            stream.feed(SETUP_HEADER)
            group = start_group(run, part, prepared, prepared.setup)
            code, stream = follow(group, run, part, stream)
            if code != 0 or read_control(run).stop:
                return end_share(part, code, stream, failure=f"setup failed (exit {code})")
            stream.feed(COMMAND_HEADER)
        group = start_group(run, part, prepared, record=not run.setup)
        code, stream = follow(group, run, part, stream)
        keep_profiles(run, part)
        keep_artifacts(run)
        return end_share(part, code, stream)
    except (run_as.AccountRefused, CommandRefused) as refused:
        fail_run(part, str(refused))
        return f"refused: {refused}"
    except Exception as error:
        log.exception("run %s on %s failed", part.run_id, part.node.hostname)
        fail_run(part, f"The node worker on {part.node.hostname} failed: {error}")
        raise
    finally:
        if group is not None and not group.exited():
            group.stop(settings.RUN_CANCEL_GRACE_S)
        if prepared is not None:
            prepared.kind.stop(prepared.started, settings.RUN_CANCEL_GRACE_S)
        kill_descendants()


def claim(run_node_id: int, worker: str) -> RunNode | None:
    """Take the share if it still waits and its GPUs are free (compare-and-set under row locks)."""
    with transaction.atomic():
        shares = RunNode.objects.select_for_update(of=("self",)).select_related("run", "node")
        part = shares.filter(pk=run_node_id).first()
        if part is None or part.status != RunNodeStatus.QUEUED:
            return None
        run = Run.objects.select_for_update().get(pk=part.run_id)
        if run.status not in (RunStatus.QUEUED, RunStatus.STARTING) or run.cancel_requested_at:
            return None
        gpu_ids = list(run.gpus.filter(node=part.node).values_list("pk", flat=True))
        # Locking the GPU rows serialises claims of the same GPUs by different runs.
        list(GPU.objects.select_for_update().filter(pk__in=gpu_ids).values_list("pk", flat=True))
        if busy_gpu_ids(gpu_ids, run):
            raise GPUsBusy(f"run {run.pk}: GPUs in use on {part.node.hostname}")
        if run.status == RunStatus.QUEUED:
            run.start()
        now = timezone.now()
        part.status, part.worker, part.heartbeat_at = RunNodeStatus.STARTING, worker, now
        part.save(update_fields=["status", "worker", "heartbeat_at"])
        Run.objects.filter(pk=run.pk).update(heartbeat_at=now)
        part.run = run
        broadcast.send_after_commit(run.pk, state_payload(run))
    return part


def busy_gpu_ids(gpu_ids: list[int], run: Run) -> set[int]:
    """Which of these GPUs another starting or running run holds."""
    through = Run.gpus.through.objects.filter(gpu_id__in=gpu_ids, run__status__in=RunStatus.active())
    return set(through.exclude(run_id=run.pk).values_list("gpu_id", flat=True))


def wait_for_rendezvous(run: Run, part: RunNode) -> list[str] | None:
    """Node 0 of a multi-node run opens the rendezvous; the others wait for its address.

    A strategy whose command starts its own processes (``exports_rendezvous``) gets one on a single node too,
    and every node's address: each node publishes its own and waits for the others'. Returns those addresses
    in rank order ([] when the strategy needs none), or None when the run was stopped meanwhile.
    """
    exports = run.workload == COMMAND and strategies.get(run.strategy).exports_rendezvous
    if run.nodes.count() < 2 and not exports:
        return []
    if exports:
        RunNode.objects.filter(pk=part.pk).update(environment={"address": settings.RUN_RENDEZVOUS_HOST})
    if part.rank == 0:
        run.rendezvous = f"{settings.RUN_RENDEZVOUS_HOST}:{free_port()}"
        Run.objects.filter(pk=run.pk).update(rendezvous=run.rendezvous)
    deadline = time.monotonic() + settings.RUN_RENDEZVOUS_TIMEOUT_S
    beat = 0.0
    while time.monotonic() < deadline:
        control = read_control(run)
        if control.stop:
            return None
        addrs = node_addresses(run) if exports else []
        if control.rendezvous and addrs is not None:
            run.rendezvous = control.rendezvous
            return addrs
        if time.monotonic() - beat >= settings.RUN_HEARTBEAT_S:
            beat = time.monotonic()
            RunNode.objects.filter(pk=part.pk).update(heartbeat_at=timezone.now())
        time.sleep(0.2)
    raise TimeoutError(f"the run's nodes did not meet within {settings.RUN_RENDEZVOUS_TIMEOUT_S:.0f} s")


def node_addresses(run: Run) -> list[str] | None:
    """Every node's published address, in rank order; None while one has not published yet."""
    addrs = list(RunNode.objects.filter(run=run).order_by("rank").values_list("environment__address", flat=True))
    return addrs if all(isinstance(addr, str) and addr for addr in addrs) else None


def free_port() -> int:
    # Chosen here and bound by torchrun a moment later; another program taking it in between
    # makes the run fail at its rendezvous, with the reason in its log.
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]


def prepare(run: Run, part: RunNode, addrs: list[str]) -> Prepared:
    """Decide this node's command, environment, directory and account; refuse before anything starts."""
    nodes = run.nodes.count()
    argv = node_argv(run, part, nodes, addrs)
    kind = environments.get(run.env_kind)
    if run.workload == COMMAND and (refused := kind.check_on_node(run.env_ref)):
        raise CommandRefused(refused)
    account = run_as.run_account(run.owner)  # AccountRefused: nothing has started
    output_dir = run_as.output_dir(run, account)
    checkpoint_dir = checkpoint_dirs.prepare(run, account)
    cwd = working_dir(run, part, output_dir)
    extra = strategy_env(run, part, nodes, addrs)
    env = environment.process_env(run, part, account, output_dir, checkpoint_dir, extra)
    started = Started(
        run_id=run.pk,
        node_rank=part.rank,
        workdir=cwd,
        gpu_indexes=list(part.gpu_indexes),
        # What the run sets beyond the node worker's own environment (a container passes these in).
        variables={name: value for name, value in env.items() if os.environ.get(name) != value},
        uid=account.uid if account else os.geteuid(),
        gid=account.gid if account else os.getegid(),
        ref=run.env_ref,
    )
    try:
        wrapped = kind.wrap(argv, started)
        setup = kind.wrap(setup_argv(run), started) if run.setup else []
    except EnvironmentRefused as refused:
        raise CommandRefused(str(refused)) from None
    return Prepared(wrapped, kind.client_env(env), cwd, account, kind, started, setup)


def working_dir(run: Run, part: RunNode, output_dir) -> str:
    """A command's own directory (its run directory when it names none); a script's; the fleet's code."""
    if run.workload != COMMAND:
        return os.path.dirname(run.script) if run.script else str(settings.BASE_DIR)
    cwd = run.workdir or str(output_dir)
    if not os.path.isdir(cwd):
        raise CommandRefused(f"The working directory {cwd} does not exist on {part.node.hostname}.")
    return cwd


def start_group(
    run: Run, part: RunNode, prepared: Prepared, argv: list[str] | None = None, record=True
) -> ProcessGroup:
    """Start ``argv`` (default: the share's command) as the share's process group; ``record`` writes its record."""
    prepared.kind.clear(prepared.started)
    group = ProcessGroup(argv or prepared.argv, prepared.env, prepared.cwd, prepared.starts_as)
    fields = {"status": RunNodeStatus.RUNNING, "pid": group.pid}
    if record:
        fields["environment"] = {**share_record(run, part, prepared), "account": account_name(prepared.account)}
    with transaction.atomic():
        RunNode.objects.filter(pk=part.pk).update(**fields)
        if record and part.rank == 0:
            # What node 0 knows, until the training process's own report (rank 0's env event) adds to it.
            run.environment = {
                **fields["environment"],
                **Run.objects.values_list("environment", flat=True).get(pk=run.pk),
            }
            Run.objects.filter(pk=run.pk).update(environment=run.environment)
    shown = [redact(word, secret_values(run.variables)) for word in (argv or prepared.argv)[:6]]
    log.info("run %s: started %s on %s as pid %s", run.pk, shown, part.node.hostname, group.pid)
    return group


def share_record(run: Run, part: RunNode, prepared: Prepared) -> dict:
    if run.workload == COMMAND:
        return environment.command_record(run, part, prepared.argv, prepared.cwd)
    return environment.node_record(run, part, prepared.argv)


def account_name(account: run_as.Account | None) -> str:
    return account.name if account else worker_account()


def keep_artifacts(run: Run) -> None:
    """Collect what the processes left for download before the run's end is recorded; never fails the run."""
    try:
        artifacts.collect(run, run_as.run_dir(run))
    except Exception:
        log.exception("run %s: could not collect its artifacts", run.pk)


def worker_account() -> str:
    return pwd.getpwuid(os.geteuid()).pw_name


def follow(group: ProcessGroup, run: Run, part: RunNode, stream: RunStream | None = None) -> tuple[int, RunStream]:
    """Stream the group's output until it exits, or stop it when the run is cancelled or ended elsewhere."""
    stream = stream or RunStream(run, part)
    last_write = time.monotonic()
    next_tick = time.monotonic() + settings.RUN_FLUSH_S
    exited_at = None
    eof = False
    while not eof:
        eof = drain(group, stream, timeout=max(0.0, next_tick - time.monotonic()))
        if time.monotonic() < next_tick and not eof:
            continue
        next_tick = time.monotonic() + settings.RUN_FLUSH_S
        if stream.pending or time.monotonic() - last_write >= settings.RUN_HEARTBEAT_S:
            if safe_flush(stream):
                last_write = time.monotonic()
        if read_control(run).stop:
            code = group.stop(settings.RUN_CANCEL_GRACE_S)
            drain_rest(group, stream)
            safe_flush(stream)
            return code, stream
        if not eof and group.exited():
            exited_at = exited_at or time.monotonic()
            if time.monotonic() - exited_at > LINGER_S:
                kill_descendants()  # the launcher is gone, but something it started still holds its output
    code = group.wait()
    safe_flush(stream)
    return code, stream


def drain(group: ProcessGroup, stream: RunStream, timeout: float) -> bool:
    """Feed the lines that arrive within ``timeout``; True once the output has ended."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = group.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return False
        if line is None:
            return True
        stream.feed(line)
        if time.monotonic() >= deadline:
            return False


def drain_rest(group: ProcessGroup, stream: RunStream) -> None:
    while not group.lines.empty():
        line = group.lines.get_nowait()
        if line is not None:
            stream.feed(line)


def safe_flush(stream: RunStream) -> bool:
    """Write a batch; a database hiccup keeps the batch for the next try instead of killing the run."""
    try:
        stream.flush()
        return True
    except DatabaseError:
        log.warning("run %s: could not write progress; retrying", stream.run.pk, exc_info=True)
        connection.close()
        return False


def read_control(run: Run) -> Control:
    status, cancel, rendezvous = Run.objects.values_list("status", "cancel_requested_at", "rendezvous").get(pk=run.pk)
    return Control(status, cancel is not None, rendezvous)


def keep_profiles(run: Run, part: RunNode) -> None:
    """Store what the profiler left on this node before the run's end is announced; never fails the run."""
    try:
        lines = collect_profiles(run)
    except Exception:
        log.exception("run %s: could not store its profile", run.pk)
        lines = ["[fleet] the profile could not be stored; the node worker's log says why"]
    if lines:
        RunLog.objects.bulk_create(RunLog(run_id=run.pk, node_rank=part.rank, line=line) for line in lines)


def end_share(part: RunNode, code: int | None, stream: RunStream | None, failure: str = "") -> str:
    """Record this node's exit and, when it decides the run's end, the run's end state; ``failure`` says what
    a non-zero exit means when it is not the command's own (a setup step's)."""
    with transaction.atomic():
        RunNode.objects.filter(pk=part.pk).update(status=RunNodeStatus.EXITED, exit_code=code)
        run = Run.objects.select_for_update().get(pk=part.run_id)
        outcome = decide(run, part, code, stream, failure)
        if outcome is not None:
            status, error = outcome
            try:
                run.finish(status, error=error, exit_code=code)
            except IllegalTransition:
                pass
            broadcast.send_after_commit(run.pk, state_payload(run))
    return f"{part.node.hostname}: exit code {code}, run {run.status}"


def decide(
    run: Run, part: RunNode, code: int | None, stream: RunStream | None, failure: str = ""
) -> tuple[str, str] | None:
    """The run's end state once this node has exited, or None while other nodes still decide it."""
    if run.status in RunStatus.finished():
        return None
    if run.cancel_requested_at:
        who = run.cancelled_by.get_username() if run.cancelled_by else "an admin"
        return RunStatus.CANCELLED, run.stop_reason or f"Cancelled by {who}."
    if code != 0 and failure:
        return RunStatus.FAILED, failure
    if code != 0:
        hint = stream.error_hint() if stream else ""
        message = f"The processes on {part.node.hostname} exited with code {code}."
        return RunStatus.FAILED, f"{message}\n{hint}".strip()
    others = RunNode.objects.filter(run=run).exclude(pk=part.pk)
    if others.exclude(status=RunNodeStatus.EXITED, exit_code=0).exists():
        return None
    return RunStatus.SUCCEEDED, ""


def fail_run(part: RunNode, error: str) -> None:
    try:
        with transaction.atomic():
            RunNode.objects.filter(pk=part.pk).update(status=RunNodeStatus.EXITED)
            run = Run.objects.select_for_update().get(pk=part.run_id)
            if run.status not in RunStatus.finished():
                run.finish(RunStatus.FAILED, error=error)
                broadcast.send_after_commit(run.pk, state_payload(run))
    except DatabaseError:
        log.exception("run %s: could not record its failure", part.run_id)
