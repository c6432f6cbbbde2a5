"""A real podman for tests: its own configuration and storage, and a busybox-static image imported once.

Debian's podman defaults to crun and systemd cgroups, which fail on this kernel's cgroups; runc with cgroupfs
works. The storage is the test's own, so nothing here meets another test's images. Processes that run podman
(a node worker among them) get ``Podman.env``.
"""

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

IMAGE = "localhost/fleet-test/busybox:1"
APPLETS = ("sh", "echo", "sleep", "cat", "env", "id", "pwd", "true")


@dataclass(frozen=True)
class Podman:
    root: Path

    @property
    def env(self) -> dict[str, str]:
        return {
            "CONTAINERS_CONF": str(self.root / "containers.conf"),
            "CONTAINERS_STORAGE_CONF": str(self.root / "storage.conf"),
        }


def make_podman(root: Path) -> Podman:
    """Write the configuration under ``root``; fails the test when podman, runc or busybox-static is missing."""
    if shutil.which("podman") is None or shutil.which("runc") is None:
        pytest.fail("podman and runc are not installed: run `make podman`")
    if subprocess.run(["dpkg", "-s", "busybox-static"], capture_output=True).returncode != 0:
        pytest.fail("the test image needs Debian's busybox-static: run `make podman`")
    events = "journald" if Path("/run/systemd/journal/socket").exists() else "file"
    (root / "containers.conf").write_text(
        "[containers]\ndefault_ulimits = []\n"
        f'[engine]\nruntime = "runc"\ncgroup_manager = "cgroupfs"\nevents_logger = "{events}"\n'
    )
    (root / "storage.conf").write_text(
        f'[storage]\ndriver = "overlay"\ngraphroot = "{root}/graph"\nrunroot = "{root}/run"\n'
    )
    return Podman(root)


def import_image(root: Path) -> None:
    """Import the busybox-static image as IMAGE (podman must already see the test's configuration)."""
    tarball = build_rootfs(root, Path("/bin/busybox"))
    subprocess.run(["podman", "import", "-q", str(tarball), IMAGE], check=True, capture_output=True, timeout=120)


@contextmanager
def podman_for_tests(root: Path) -> Iterator[Podman]:
    """The test's podman, seen by this process (its environment set while inside), the image imported once;
    every container and image is removed on the way out."""
    configured = make_podman(root)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in configured.env.items():
            patch.setenv(name, value)
        import_image(root)
        try:
            yield configured
        finally:
            remove_everything()


def remove_everything() -> None:
    subprocess.run(["podman", "rm", "-a", "-f"], capture_output=True, timeout=120)
    subprocess.run(["podman", "rmi", "-a", "-f"], capture_output=True, timeout=120)


def build_rootfs(root: Path, busybox: Path) -> Path:
    rootfs = root / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    shutil.copy2(busybox, rootfs / "bin" / "busybox")
    for applet in APPLETS:
        (rootfs / "bin" / applet).symlink_to("busybox")
    tarball = root / "rootfs.tar"
    subprocess.run(["tar", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
    return tarball


def container_names() -> list[str]:
    """Every container podman knows, running or not."""
    done = subprocess.run(
        ["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.split()
