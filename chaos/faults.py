"""The faults a campaign injects, each one undoable.

- :class:`Firewall`: network partitions between nodes of a :class:`chaos.netns.Network`, as
  nftables rules in the receiving node's namespace (``table inet chaos``). Blocking "A hears
  nothing from B" is one rule in A's input chain; a symmetric partition is that both ways; random
  packet loss is a ``numgen random`` rule. The whole table is rewritten on every change
  (``nft -f``, atomic), so healing is one flush.
- :func:`pause` / :func:`resume`: SIGSTOP and SIGCONT of a process (a broker, ZooKeeper).
- :class:`DiskFiller`: fills the small filesystem that holds one broker's log dir with a ballast
  file, and frees it again.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess

from chaos.netns import Network, NetworkError, Node


class Firewall:
    """Drops between nodes, by (receiver, sender) pairs and per-receiver loss."""

    def __init__(self, network: Network):
        self.network = network
        self.blocked: set[tuple[str, str]] = set()  # (receiver name, sender name)
        self.loss: dict[tuple[str, str], int] = {}  # (receiver, sender) -> percent dropped

    def block(self, receiver: Node, sender: Node) -> None:
        """``receiver`` drops every packet from ``sender`` (a one-way partition)."""
        self.blocked.add((receiver.name, sender.name))
        self._apply({receiver.name})

    def partition(self, a: Node, b: Node) -> None:
        """Neither hears the other."""
        self.blocked.update({(a.name, b.name), (b.name, a.name)})
        self._apply({a.name, b.name})

    def isolate(self, node: Node) -> None:
        """``node`` hears nobody and nobody hears it (the root namespace still does)."""
        touched = {node.name}
        for other in self.network.nodes.values():
            if other.name != node.name:
                self.blocked.update({(node.name, other.name), (other.name, node.name)})
                touched.add(other.name)
        self._apply(touched)

    def lose(self, receiver: Node, sender: Node, percent: int) -> None:
        """``receiver`` drops ``percent`` % of the packets from ``sender``, at random."""
        self.loss[(receiver.name, sender.name)] = percent
        self._apply({receiver.name})

    def heal(self) -> None:
        touched = {r for r, _ in self.blocked} | {r for r, _ in self.loss}
        self.blocked.clear()
        self.loss.clear()
        self._apply(touched)

    def _apply(self, receivers: set[str]) -> None:
        for name in receivers:
            node = self.network.nodes[name]
            rules = []
            for receiver, sender in sorted(self.blocked):
                if receiver == name:
                    rules.append(f"ip saddr {self.network.nodes[sender].ip} drop")
            for (receiver, sender), percent in sorted(self.loss.items()):
                if receiver == name:
                    ip = self.network.nodes[sender].ip
                    rules.append(f"ip saddr {ip} numgen random mod 100 < {percent} drop")
            script = "table inet chaos {\n chain input {\n  type filter hook input priority 0;\n"
            script += "".join(f"  {rule}\n" for rule in rules)
            script += " }\n}\n"
            # Declaring the table first makes the delete succeed on a namespace without one.
            script = "table inet chaos\ndelete table inet chaos\n" + script
            result = subprocess.run(
                [*self.network.prefix(node), "nft", "-f", "-"],
                input=script,
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                raise NetworkError(f"nft in {node.namespace}: {result.stderr.strip()}")


def pause(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)


def resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:  # killed while paused
        pass


class DiskFiller:
    """A tmpfs of ``size_mb`` mounted at ``path`` (the test makes it; :meth:`close` unmounts),
    which :meth:`fill` fills to the last byte with a ballast file and :meth:`free` empties."""

    def __init__(self, path: str, size_mb: int):
        os.makedirs(path, exist_ok=True)
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", path],
            check=True,
            capture_output=True,
        )
        self.path = path
        self.ballast = os.path.join(path, "chaos-ballast")

    def fill(self) -> int:
        """Write zeros until the filesystem is full (to the last byte: a smaller write is
        tried after each refusal); returns the bytes written."""
        zeros = bytes(1 << 20)
        written = 0
        size = len(zeros)
        fd = os.open(self.ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            while size >= 1:
                try:
                    written += os.write(fd, zeros[:size])
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    size //= 2
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        try:
            os.unlink(self.ballast)
        except FileNotFoundError:
            pass

    def close(self) -> None:
        self.free()
        subprocess.run(["umount", "-l", self.path], capture_output=True)
