"""A private network of Linux network namespaces for the fault campaign.

Every process of a campaign (ZooKeeper, each broker, the clients) runs in a namespace of its own,
joined to one bridge by a veth pair, with an address in a /24 of its own. The namespaces have no
default route, so nothing they send leaves the bridge; the root namespace holds the bridge's
address (``.254``) and reaches every node for set-up and checking. Faults are nftables rules
inside a node's namespace (:mod:`chaos.faults`), so they never touch the machine's own traffic.

    with Network("wsc", "10.91.0") as net:
        zk = net.add("zk")            # Node(name="zk", namespace="wsc-zk", ip="10.91.0.1")
        net.prefix(zk)                # ["ip", "netns", "exec", "wsc-zk"]

Needs root, ``ip`` (iproute2) and ``nft`` (nftables). A network left behind by a killed run is
removed when the next one with the same prefix starts.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess


class NetworkError(RuntimeError):
    pass


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(argv, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise NetworkError(f"{' '.join(argv)}: {result.stderr.strip() or result.returncode}")
    return result


def missing_prerequisites() -> list[str]:
    """What this machine lacks for a campaign network (empty when it can run one)."""
    import os

    missing = []
    if os.geteuid() != 0:
        missing.append("root (network namespaces)")
    for command, package in (("ip", "iproute2"), ("nft", "nftables")):
        if shutil.which(command) is None:
            missing.append(f"{command} (apt-get install {package})")
    return missing


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    namespace: str
    ip: str


class Network:
    """A bridge and one namespace per node; :meth:`close` removes them all."""

    def __init__(self, prefix: str = "wsc", subnet: str = "10.91.0"):
        """``subnet`` is the first three octets of the /24 the nodes get addresses in."""
        if len(prefix) > 6:
            raise ValueError("a prefix of at most 6 characters (interface names are short)")
        self.prefix_name = prefix
        self.subnet = subnet
        self.bridge = f"{prefix}-br0"
        self.nodes: dict[str, Node] = {}
        self._remove_leftovers()
        _run("ip", "link", "add", self.bridge, "type", "bridge")
        _run("ip", "addr", "add", f"{subnet}.254/24", "dev", self.bridge)
        _run("ip", "link", "set", self.bridge, "up")

    @property
    def host_ip(self) -> str:
        """The root namespace's address on the bridge (where checks come from)."""
        return f"{self.subnet}.254"

    def _remove_leftovers(self) -> None:
        listed = _run("ip", "netns", "list", check=False).stdout.split()
        for name in listed:
            if name.startswith(f"{self.prefix_name}-"):
                _run("ip", "netns", "del", name, check=False)
        _run("ip", "link", "del", self.bridge, check=False)

    def add(self, name: str) -> Node:
        """A namespace ``PREFIX-NAME`` with loopback up and ``eth0`` on the bridge."""
        if name in self.nodes:
            raise ValueError(f"node {name!r} exists")
        index = len(self.nodes) + 1
        if index > 250:
            raise ValueError("at most 250 nodes")
        node = Node(name, f"{self.prefix_name}-{name}", f"{self.subnet}.{index}")
        outside = f"{self.prefix_name}-{name}"[:15]
        _run("ip", "netns", "add", node.namespace)
        _run(
            "ip",
            "link",
            "add",
            outside,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            node.namespace,
        )
        _run("ip", "link", "set", outside, "master", self.bridge, "up")
        _run("ip", "-n", node.namespace, "addr", "add", f"{node.ip}/24", "dev", "eth0")
        _run("ip", "-n", node.namespace, "link", "set", "eth0", "up")
        _run("ip", "-n", node.namespace, "link", "set", "lo", "up")
        self.nodes[name] = node
        return node

    def prefix(self, node: Node | str) -> list[str]:
        """The command prefix that runs a program inside ``node``'s namespace."""
        node = self.nodes[node] if isinstance(node, str) else node
        return ["ip", "netns", "exec", node.namespace]

    def run(self, node: Node | str, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run(*self.prefix(node), *argv, check=check)

    def close(self) -> None:
        for node in self.nodes.values():
            _run("ip", "netns", "del", node.namespace, check=False)
        self.nodes.clear()
        _run("ip", "link", "del", self.bridge, check=False)

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
