"""The container image kind with a real podman: the image is built here, the wrapped command really runs."""

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from monitoring.agent.localruns import LocalRuns, read_environ
from tests.support.containers import IMAGE, podman_for_tests
from training import environments
from training.environments.base import Started
from training.environments.container import ContainerError, Image, container_name


@pytest.fixture(scope="module")
def podman(tmp_path_factory):
    """podman with the test's own configuration and storage, and the test image imported once."""
    with podman_for_tests(tmp_path_factory.mktemp("podman")) as configured:
        yield configured.root


@pytest.fixture
def containers(settings, podman):
    settings.RUN_CONTAINER_RUNTIME = "podman"
    settings.RUN_CONTAINER_IMAGES = ["localhost/fleet-test/busybox", "ghcr.io/lab/"]
    settings.RUN_CONTAINER_MOUNTS = []
    settings.RUN_CONTAINER_GPUS = False  # no GPUs here, and no CDI specification for them
    return environments.get("image")


def started(tmp_path, **changes) -> Started:
    facts = dict(
        run_id=int(time.time() * 1000) % 10**9,
        node_rank=0,
        workdir=str(tmp_path),
        gpu_indexes=[0],
        uid=65534,
        gid=65534,
        ref=IMAGE,
    )
    return Started(**{**facts, **changes})


def fleet_env(share: Started, node: str, **variables: str) -> dict:
    """What the node worker gives the runtime's client: its environment, the fleet's variables, the run's."""
    return environments.get("image").client_env(
        {
            **os.environ,
            "FLEET_RUN_ID": str(share.run_id),
            "FLEET_NODE": node,
            "FLEET_NODE_RANK": str(share.node_rank),
            "CUDA_VISIBLE_DEVICES": ",".join(map(str, share.gpu_indexes)),
            **variables,
        }
    )


def leftovers(share: Started) -> list[int]:
    """Host pids of processes that still carry the run's FLEET_RUN_ID."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and read_environ(f"/proc/{entry}/environ").get("FLEET_RUN_ID") == str(share.run_id):
            pids.append(int(entry))
    return pids


def container_exists(name: str) -> bool:
    done = subprocess.run(["podman", "container", "exists", name], capture_output=True, timeout=60)
    return done.returncode == 0


class TestCheck:
    def test_it_admits_an_allowed_name_its_tags_and_a_namespace(self, containers):
        assert containers.check(IMAGE) is None
        assert containers.check("localhost/fleet-test/busybox") is None
        assert containers.check("ghcr.io/lab/train:v2") is None
        assert containers.check("ghcr.io/lab/team/train@sha256:" + "a" * 64) is None

    def test_it_refuses_an_image_not_on_the_allow_list(self, containers):
        refused = containers.check("docker.io/library/python:3.12")
        assert "'docker.io/library/python:3.12'" in refused and "RUN_CONTAINER_IMAGES" in refused
        assert containers.check("localhost/fleet-test/busybox-evil") is not None
        assert containers.check("localhost/fleet-test/busybox:1/x") is not None
        assert containers.check("ghcr.io/lab/") is not None

    def test_it_refuses_every_image_when_containers_are_off(self, containers, settings):
        settings.RUN_CONTAINER_IMAGES = []
        refused = containers.check(IMAGE)
        assert "off" in refused and "RUN_CONTAINER_IMAGES" in refused and IMAGE in refused

    @pytest.mark.parametrize(
        ("ref", "words"),
        [
            ("ghcr.io/lab/train v2", "whitespace"),
            ("ghcr.io/lab/train\0", "NUL"),
            ("--privileged", '"-"'),
            ("ghcr.io/lab/" + "a" * 300, "longer than 255"),
            ("ghcr.io/lab/../etc", "not an image reference"),
        ],
    )
    def test_it_refuses_a_malformed_name(self, containers, ref, words):
        refused = containers.check(ref)
        assert refused is not None and words in refused and "image name" in refused

    def test_it_needs_an_image(self, containers):
        assert "image" in containers.check("")


class TestWrap:
    def test_it_runs_the_command_in_the_image_named_after_the_run(self, containers, tmp_path, settings):
        settings.RUN_CONTAINER_MOUNTS = ["/srv/datasets"]
        share = started(tmp_path, run_id=42, node_rank=1, variables={"HF_TOKEN": "hf_secret", "SEED": "3"})
        argv = containers.wrap(["python", "train.py", "--lr", "0.1"], share)
        assert argv[:8] == ["podman", "run", "--rm", "--init", "--name", "fleet-run-42-1", "--network", "host"]
        assert pairs(argv, "--user") == ["65534:65534"]
        assert pairs(argv, "--workdir") == [str(tmp_path)]
        assert pairs(argv, "-v") == [f"{tmp_path}:{tmp_path}", "/srv/datasets:/srv/datasets"]
        assert argv[-5:] == [IMAGE, "python", "train.py", "--lr", "0.1"]
        env = pairs(argv, "--env")
        for name in ("FLEET_NODE", "FLEET_NODE_RANK", "CUDA_VISIBLE_DEVICES", "HF_TOKEN", "SEED"):
            assert name in env
        # The run's tag by value (no secret): the client does not carry it, so it is never taken for the run's.
        assert "FLEET_RUN_ID=42" in env and "FLEET_RUN_ID" not in env
        assert "hf_secret" not in " ".join(argv)
        assert "--device" not in argv and "--gpus" not in argv

    def test_podman_gets_each_gpu_through_cdi(self, containers, tmp_path, settings):
        settings.RUN_CONTAINER_GPUS = True
        argv = containers.wrap(["true"], started(tmp_path, gpu_indexes=[2, 3]))
        assert pairs(argv, "--device") == ["nvidia.com/gpu=2", "nvidia.com/gpu=3"]
        # Inside, CUDA numbers the container's own GPUs from 0.
        assert "CUDA_VISIBLE_DEVICES=0,1" in pairs(argv, "--env")
        assert "CUDA_VISIBLE_DEVICES" not in pairs(argv, "--env")

    def test_docker_gets_the_gpus_as_one_device_list(self, containers, tmp_path, settings):
        settings.RUN_CONTAINER_GPUS = True
        settings.RUN_CONTAINER_RUNTIME = "docker"
        argv = containers.wrap(["true"], started(tmp_path, gpu_indexes=[2, 3]))
        assert argv[:2] == ["docker", "run"]
        assert pairs(argv, "--gpus") == ['"device=2,3"']
        assert "--device" not in argv

    def test_it_mounts_the_fleets_directories_for_the_run(self, containers, tmp_path):
        share = started(tmp_path, variables={"FLEET_CHECKPOINT_DIR": "/var/fleet/checkpoints/7"})
        assert "/var/fleet/checkpoints/7:/var/fleet/checkpoints/7" in pairs(containers.wrap(["true"], share), "-v")

    def test_it_refuses_a_directory_it_cannot_mount(self, containers, tmp_path):
        with pytest.raises(ContainerError, match="cannot be mounted"):
            containers.wrap(["true"], started(tmp_path, workdir="/data/a:b"))

    def test_it_refuses_an_image_the_node_does_not_allow(self, containers, tmp_path):
        with pytest.raises(ContainerError, match="RUN_CONTAINER_IMAGES"):
            containers.wrap(["true"], started(tmp_path, ref="docker.io/evil"))

    def test_the_images_python_and_torchrun(self, containers):
        assert containers.python(IMAGE) == "python"
        assert containers.torchrun(IMAGE) == ["python", "-m", "torch.distributed.run"]


class TestInPodman:
    def test_the_output_and_a_variables_value_arrive_but_the_value_is_not_on_the_command_line(
        self, containers, tmp_path
    ):
        share = started(tmp_path, variables={"HF_TOKEN": "hf_s3cret"})
        argv = containers.wrap(["sh", "-c", 'echo "token=$HF_TOKEN run=$FLEET_RUN_ID"; id -u; pwd'], share)
        assert "hf_s3cret" not in " ".join(argv)
        done = subprocess.run(
            argv, env=fleet_env(share, "ctr-test", HF_TOKEN="hf_s3cret"), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [f"token=hf_s3cret run={share.run_id}", "65534", str(tmp_path)]
        assert not container_exists(container_name(share))

    def test_the_process_inside_is_the_runs_as_the_host_sees_it(self, containers, tmp_path):
        share = started(tmp_path)
        node = f"ctr-{uuid.uuid4().hex[:8]}"
        client = subprocess.Popen(
            containers.wrap(["sleep", "60"], share), env=fleet_env(share, node), stdout=subprocess.DEVNULL
        )
        try:
            # The command inside is the run's process; the runtime's client, which holds no GPU, is not.
            [process] = wait_for(lambda: run_processes(node))
            assert process["run"] == share.run_id and process["name"] == "sleep"
            environ = read_environ(f"/proc/{process['pid']}/environ")
            assert environ["FLEET_RUN_ID"] == str(share.run_id)
            assert process["pid"] not in descendants(client.pid)  # conmon's, not the client's: only stop() ends it
        finally:
            containers.stop(share, grace_s=1)
            client.wait(timeout=60)

    def test_stop_stops_and_removes_the_container_and_leaves_no_process(self, containers, tmp_path):
        share = started(tmp_path)
        client = subprocess.Popen(
            containers.wrap(["sh", "-c", "trap '' TERM; sleep 60"], share), env=fleet_env(share, "ctr-test")
        )
        wait_for(lambda: set(leftovers(share)) - {client.pid})
        # The node worker ends the client's process group first; the container lives on without it.
        client.kill()
        client.wait(timeout=60)
        assert leftovers(share)
        begun = time.monotonic()
        containers.stop(share, grace_s=1)
        assert time.monotonic() - begun < 30
        assert leftovers(share) == []
        assert not container_exists(container_name(share))

    def test_stop_is_quiet_about_a_container_already_gone(self, containers, tmp_path, caplog):
        containers.stop(started(tmp_path, run_id=999_999_999), grace_s=0)
        assert "warning" not in caplog.text.lower()

    def test_the_record_has_the_images_digest(self, containers):
        record = containers.record(IMAGE)
        assert record["kind"] == "image" and record["image"] == IMAGE and record["runtime"] == "podman"
        assert record["digest"].startswith("sha256:") and len(record["id"]) == 64
        inspected = json.loads(subprocess.check_output(["podman", "image", "inspect", IMAGE], timeout=60))
        assert record["id"] == inspected[0]["Id"]

    def test_the_record_says_when_the_image_is_not_on_the_node(self, containers):
        record = containers.record("ghcr.io/lab/absent:1")
        assert record["image"] == "ghcr.io/lab/absent:1" and "not on this node" in record["error"]

    def test_discover_lists_the_allowed_images_on_the_node(self, containers, settings):
        assert containers.discover() == [IMAGE]
        settings.RUN_CONTAINER_IMAGES = ["ghcr.io/lab/"]
        assert containers.discover() == []

    def test_a_missing_runtime_is_named(self, containers, settings, monkeypatch, tmp_path):
        settings.RUN_CONTAINER_RUNTIME = "docker"
        monkeypatch.setenv("PATH", str(tmp_path))  # a node without docker
        assert "'docker' (RUN_CONTAINER_RUNTIME) is not installed" in containers.record(IMAGE)["error"]


def run_processes(node: str) -> list[dict]:
    """What the simulated agent of ``node`` reports on its GPU 0."""
    return LocalRuns(node).processes_by_gpu(gpu_count=1).get(0, [])


def pairs(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, item in enumerate(argv[:-1]) if item == option]


def descendants(pid: int) -> set[int]:
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def wait_for(probe, timeout_s: float = 60.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"nothing within {timeout_s} s")


def test_image_is_registered():
    assert isinstance(environments.get("image"), Image)
    assert ("image", "a container image") in environments.choices()
