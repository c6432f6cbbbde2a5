"""Hosts on one machine: a network namespace per GPU node, joined by veth pairs to a bridge in the root
namespace, which plays the web host with the bridge's address.

Every name carries the pid of the test session that made it (gfleet-<pid>-<node>, gfbr<pid>,
gfv<pid><letter>), so a later session removes what a killed one left behind and never touches what a
live one is using.
"""

from __future__ import annotations

import ipaddress
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass

import psutil

NAMESPACE = re.compile(r"^gfleet-(?P<pid>\d+)-")
LINK = re.compile(r"^gf(?:br|v)(?P<pid>\d+)[a-z]?$")


class NamespacesUnavailable(Exception):
    """This machine (or this user) cannot make network namespaces."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        result = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise NamespacesUnavailable("the ip command (Debian's iproute2) is not installed") from None
    if check and result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result


@dataclass
class Node:
    """One GPU node's host: its namespace, its address on the bridge, and its end of the cable."""

    name: str
    namespace: str
    address: str
    cable: str  # the veth end on the bridge; down is a cut link
    interface: str = "eth0"  # the veth end inside the namespace

    def argv(self, *command: str) -> list[str]:
        """``command`` run on this host (inside its namespace)."""
        return ["ip", "netns", "exec", self.namespace, *command]


class Network:
    """A bridge (the web host's address) and one namespace per node, removed again by ``destroy``."""

    def __init__(self, node_names: list[str], tag: str | None = None):
        self.tag = tag or str(os.getpid())
        self.created = False
        self.subnet = subnet_for(int(self.tag))
        hosts = list(self.subnet.hosts())
        self.bridge = f"gfbr{self.tag}"
        self.address = str(hosts[0])
        self.nodes = {
            name: Node(name, f"gfleet-{self.tag}-{name}", str(hosts[10 + i]), f"gfv{self.tag}{chr(97 + i)}")
            for i, name in enumerate(node_names)
        }

    def create(self) -> None:
        try:
            ip("netns", "add", f"gfleet-{self.tag}-probe")
        except RuntimeError as error:
            raise NamespacesUnavailable(str(error)) from None
        ip("netns", "del", f"gfleet-{self.tag}-probe")
        self.created = True
        check_subnet_is_free(self.subnet)
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{self.address}/{self.subnet.prefixlen}", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        for node in self.nodes.values():
            inner = f"{node.cable}i"[:15]
            ip("netns", "add", node.namespace)
            ip("link", "add", node.cable, "type", "veth", "peer", "name", inner)
            ip("link", "set", node.cable, "master", self.bridge)
            ip("link", "set", node.cable, "up")
            ip("link", "set", inner, "netns", node.namespace)
            inside = ["-n", node.namespace]
            ip(*inside, "link", "set", inner, "name", node.interface)
            ip(*inside, "addr", "add", f"{node.address}/{self.subnet.prefixlen}", "dev", node.interface)
            ip(*inside, "link", "set", node.interface, "up")
            ip(*inside, "link", "set", "lo", "up")

    def cut(self, name: str) -> None:
        ip("link", "set", self.nodes[name].cable, "down")

    def mend(self, name: str) -> None:
        ip("link", "set", self.nodes[name].cable, "up")

    def destroy(self) -> None:
        if not self.created:
            return
        for node in self.nodes.values():
            remove_namespace(node.namespace)
        ip("link", "del", self.bridge, check=False)


def subnet_for(pid: int) -> ipaddress.IPv4Network:
    """A /24 of 10.200.0.0/14 picked by the session's pid, so that two sessions at once get different ones."""
    return ipaddress.IPv4Network(f"10.{200 + (pid >> 8) % 4}.{pid % 256}.0/24")


def check_subnet_is_free(subnet: ipaddress.IPv4Network) -> None:
    for line in ip("-o", "-4", "addr", "show").stdout.splitlines():
        address = ipaddress.IPv4Interface(line.split()[3])
        if address.network.overlaps(subnet):
            raise RuntimeError(f"{subnet} is already in use on this machine ({line.split()[1]} has {address})")


def namespace_pids(namespace: str) -> list[int]:
    result = ip("netns", "pids", namespace, check=False)
    return [int(pid) for pid in result.stdout.split()]


def remove_namespace(namespace: str, grace_s: float = 5.0) -> None:
    """Stop every process on the host, then the host (its veth pair goes with it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in namespace_pids(namespace):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while namespace_pids(namespace) and time.monotonic() < deadline:
            time.sleep(0.1)
    ip("netns", "del", namespace, check=False)


def remove_stale() -> list[str]:
    """Namespaces and links of sessions that are gone; returns their names."""
    removed = []
    for line in ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        match = NAMESPACE.match(name)
        if match and not psutil.pid_exists(int(match["pid"])):
            remove_namespace(name, grace_s=2.0)
            removed.append(name)
    for line in ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        match = LINK.match(name)
        if match and not psutil.pid_exists(int(match["pid"])):
            ip("link", "del", name, check=False)
            removed.append(name)
    return removed
