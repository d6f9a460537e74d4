"""Packet delay and loss on one device of a network namespace, for the fault campaign (issue #17):
``tc netem`` where the kernel has it, a userspace substitute where it does not.

This machine's kernel, and CI's, is built without ``sch_netem`` and without nftables' own
``queue`` expression (``CONFIG_NFT_QUEUE``), but with the xtables ``NFQUEUE`` target, which
nftables runs through ``nft_compat``. So the substitute is one rule per address family, written
with ``iptables``/``ip6tables`` (the nf_tables flavour: it lands in that namespace's nf_tables
``mangle`` table, chain ``POSTROUTING``), sending what leaves the device to an NFQUEUE; and a
listener, ``python -m chaos.netem`` started under ``ip netns exec`` so that it binds the queue of
that namespace. The listener drops each queued packet at once and, delay ± jitter later, sends
a copy of it out of the device through a raw socket, with a firewall mark that the rule lets
pass; a lost packet has no copy sent. Copies go out by due time, not by packet id: a packet
held longer (jitter) does not hold back the ones behind it, and packets reorder as with netem's
jitter.

Why a copy rather than the packet itself, accepted when due: TCP counts its packets that are
still in the host (TCP small queues) and stops sending past about a millisecond's worth of them;
held packets count, so a TCP stream through held packets crawls (measured: 1 MB/s at 5 ms
delay, 0.26 MB/s at 20 ms). netem frees its packets from their socket for the same reason.
Packets larger than the device's MTU (fragmented after this hook) and those the kernel reports
without payload are held themselves, and accepted when due; the kernel takes its verdicts in
any order.

Loss goes through the listener too, although an nftables ``numgen random ... drop`` rule would
need no userspace: a packet netfilter drops on its way out is an error to its sender (``EPERM``
from ``sendto``; TCP sees a local drop and resends at once, without loss recovery), whereas
netem's loss, like a lost packet on the wire, is silent; so is a drop verdict on a queued packet.

The listener uses ``fnfqueue`` (PyPI): it talks to the kernel's netlink queue itself (no
libnetfilter_queue), receives in a thread of its own and takes verdicts from any thread in any
order; it builds with cffi and a C compiler alone. ``NetfilterQueue``, the other binding on
PyPI, builds against libnetfilter_queue and its headers (a Debian ``-dev`` package more).
The kernel segments GSO packets before queueing them and fills in their checksums, so each copy
is a packet that fits the link.

Throughput, measured through veth on a loaded 2-core machine, at 0 to 20 ms of delay: about
14,000 small UDP packets a second (a flood of more loses the excess), TCP 11 to 18 MB/s
(without the substitute: 22,000 to 29,000 packets a second from the same sender, CPU-bound;
TCP 0.5 to 1.2 GB/s).

On exit the rules, the qdisc and the listener go, and packets still held are sent at once: the
namespace is left as it was (an nf_tables ``mangle`` table that holds no rule is removed too:
``iptables`` creates it on first use)."""

from __future__ import annotations

import argparse
import fcntl
import heapq
import ipaddress
import itertools
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# NFQUEUE numbers the listener tries, in its namespace, until one is free.
QUEUES = range(4000, 4100)
# Packets held at once (by the listener, and queued in the kernel) before new ones are dropped,
# as netem's ``limit``.
HELD_MAX = 10_000
LISTENER_STOP_SECONDS = 10.0
# At exit, the listener takes its queue as drained once no packet came for this long.
DRAINED_AFTER = 0.05
SO_RCVBUFFORCE = 33  # Linux; not in Python's socket module
# The firewall mark of the copies the listener sends, which its rule lets pass (a rule or route
# of the namespace's own that reads this bit would see them too).
MARK = 0x4E000000
# Room for one queued packet as the kernel reports it: an IP packet of up to 64 KiB and its
# netlink and nfqueue headers.
PACKET_BUFFER = 0x10000 + 1024

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def in_namespace(
    namespace: str, *command: str, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", namespace, *command], input=input, capture_output=True, text=True
    )


@contextmanager
def rules_lock() -> Iterator[None]:
    """Serialises the rule changes of all instances on this machine, so that one removing an
    empty ``mangle`` table never races another adding its rule to it."""
    with open("/run/chaos-netem.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class Netem:
    """Delays and/or drops the packets leaving ``device`` in network namespace ``namespace``
    (only those to ``peers``, when given) while the context is entered.

    ``delay_ms`` ± ``jitter_ms`` (uniform, never below zero) and ``loss_percent`` mean what
    they mean to netem. ``mode`` says afterwards which way it was done: ``"netem"`` or
    ``"nfqueue"``."""

    def __init__(
        self,
        namespace: str,
        device: str,
        delay_ms: float = 0,
        jitter_ms: float = 0,
        loss_percent: float = 0.0,
        peers: Iterable[str] | None = None,
    ) -> None:
        if delay_ms < 0 or jitter_ms < 0 or not 0 <= loss_percent <= 100:
            raise ValueError("delay and jitter are >= 0, loss is a percentage")
        self.namespace = namespace
        self.device = device
        self.delay_ms = delay_ms
        self.jitter_ms = jitter_ms
        self.loss_percent = loss_percent
        self.peers: list[IpAddress] = [ipaddress.ip_address(peer) for peer in peers or ()]
        self.mode: str | None = None
        self._undo: list[list[str]] = []
        self._listener: subprocess.Popen[str] | None = None

    def __enter__(self) -> Netem:
        try:
            if self._try_netem():
                self.mode = "netem"
            else:
                self._queue_to_listener()
                self.mode = "nfqueue"
        except BaseException:
            self._restore()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._restore()

    def _run(self, *command: str, input: str | None = None) -> str:
        """``command``'s output, run in the namespace; raises with its stderr if it fails."""
        done = in_namespace(self.namespace, *command, input=input)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} in {self.namespace}: {done.stderr.strip()}")
        return done.stdout

    def _succeeds(self, *command: str) -> bool:
        return in_namespace(self.namespace, *command).returncode == 0

    def _families(self) -> list[int]:
        return sorted({peer.version for peer in self.peers}) or [4, 6]

    def _peers(self, version: int) -> list[str]:
        return [str(peer) for peer in self.peers if peer.version == version]

    # -- netem -------------------------------------------------------------------------------

    def _netem_options(self) -> list[str]:
        return [
            "netem",
            "delay",
            f"{self.delay_ms}ms",
            f"{self.jitter_ms}ms",
            "loss",
            f"{self.loss_percent}%",
        ]

    def _try_netem(self) -> bool:
        """netem at the device's root, or, for some peers only, a ``prio`` root whose fourth
        band (which the default priomap leaves unused) is netem, with a filter per peer.
        False, with nothing left behind, where the kernel (or an existing root qdisc) refuses."""
        qdisc = ["tc", "qdisc", "add", "dev", self.device]
        if not self.peers:
            if not self._succeeds(*qdisc, "root", *self._netem_options()):
                return False
            self._undo.append(["tc", "qdisc", "del", "dev", self.device, "root"])
            return True
        if not self._succeeds(*qdisc, "root", "handle", "1:", "prio", "bands", "4"):
            return False
        self._undo.append(["tc", "qdisc", "del", "dev", self.device, "root"])
        if not self._succeeds(*qdisc, "parent", "1:4", "handle", "40:", *self._netem_options()):
            self._restore()
            return False
        for peer in self.peers:
            # Filters of one priority share one protocol: IPv4 at 1, IPv6 at 2.
            protocol, prio, match, bits = (
                ("ip", "1", "ip", 32) if peer.version == 4 else ("ipv6", "2", "ip6", 128)
            )
            self._run(
                *["tc", "filter", "add", "dev", self.device, "parent", "1:", "protocol"],
                *[protocol, "prio", prio, "u32", "match", match, "dst", f"{peer}/{bits}"],
                *["flowid", "1:4"],
            )
        return True

    # -- the substitute: NFQUEUE and the listener --------------------------------------------

    def _queue_to_listener(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")])
        )
        self._listener = subprocess.Popen(
            [*["ip", "netns", "exec", self.namespace, sys.executable, "-m", "chaos.netem"]]
            + [f"--delay-ms={self.delay_ms}", f"--jitter-ms={self.jitter_ms}"]
            + [f"--loss-percent={self.loss_percent}", f"--device={self.device}"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self._listener.stdout is not None
        ready = self._listener.stdout.readline().split()
        if ready[:1] != ["queue"]:
            self._listener.wait(LISTENER_STOP_SECONDS)
            assert self._listener.stderr is not None
            raise RuntimeError(f"chaos.netem listener: {self._listener.stderr.read().strip()}")
        with rules_lock():
            for version in self._families():
                tool = "iptables" if version == 4 else "ip6tables"
                rule = ["-t", "mangle", "POSTROUTING", "-o", self.device, "-m", "mark", "!"]
                rule += ["--mark", f"{MARK:#x}/{MARK:#x}"]
                if self.peers:
                    rule += ["-d", ",".join(self._peers(version))]
                rule += ["-j", "NFQUEUE", "--queue-num", ready[1], "--queue-bypass"]
                self._run(tool, *rule[:2], "-A", *rule[2:])
                self._undo.append([tool, *rule[:2], "-D", *rule[2:]])

    def _stop_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        assert listener.stdin is not None
        listener.stdin.close()
        try:
            listener.wait(LISTENER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            listener.kill()
            listener.wait()
        assert listener.stdout is not None and listener.stderr is not None
        listener.stdout.close()
        with listener.stderr:
            if listener.returncode != 0:
                raise RuntimeError(f"chaos.netem listener failed: {listener.stderr.read()}")

    def _restore(self) -> None:
        """Undo what was done, newest first: rules before the listener, so that no packet is
        queued once the listener has gone (``--queue-bypass`` lets them through meanwhile)."""
        with rules_lock():
            while self._undo:
                command = self._undo.pop()
                self._succeeds(*command)
                if command[0] in ("iptables", "ip6tables"):
                    self._drop_mangle_if_unused(command[0])
        self._stop_listener()

    def _drop_mangle_if_unused(self, tool: str) -> None:
        rules = in_namespace(self.namespace, tool, "-t", "mangle", "-S").stdout.splitlines()
        if rules and all(rule.startswith("-P ") and rule.endswith(" ACCEPT") for rule in rules):
            family = "ip" if tool == "iptables" else "ip6"
            self._succeeds("nft", "delete", "table", family, "mangle")


# -- the listener (python -m chaos.netem, inside the namespace) ----------------------------


class Holder:
    """Copies of packets held until due, then sent; by due time, from a thread of its own."""

    def __init__(
        self, delay_ms: float, jitter_ms: float, loss_percent: float, device: str, mtu: int
    ) -> None:
        self.delay = delay_ms / 1000
        self.jitter = jitter_ms / 1000
        self.loss = loss_percent / 100
        self.mtu = mtu
        self.random = random.Random()
        self.held: list[tuple[float, int, Any]] = []
        self.order = itertools.count()
        self.changed = threading.Condition()
        self.stopping = False
        self.taken = 0
        self.senders = {}
        for version, family in ((4, socket.AF_INET), (6, socket.AF_INET6)):
            sender = socket.socket(family, socket.SOCK_RAW, socket.IPPROTO_RAW)
            sender.setsockopt(socket.SOL_SOCKET, socket.SO_MARK, MARK)
            sender.setsockopt(socket.SOL_SOCKET, socket.SO_BINDTODEVICE, device.encode())
            self.senders[version] = sender

    def take(self, packet: Any) -> None:
        """Drops ``packet`` with the loss probability, else holds it for delay ± jitter: a copy,
        the packet itself dropped at once (see the module's docstring), or the packet itself if
        it is larger than the device's MTU (to be fragmented after this hook)."""
        self.taken += 1
        if self.loss and self.random.random() < self.loss:
            packet.drop()
            return
        wait = self.delay + (self.random.uniform(-self.jitter, self.jitter) if self.jitter else 0)
        entry = packet
        try:
            if len(packet.payload) <= self.mtu:
                entry = packet.payload
                packet.drop()
        except KeyError:
            pass  # the kernel sent no payload (seen with some IPv6 packets): hold it
        if self.stopping:
            self.send(entry)
            return
        # Even when due at once, sent from the releasing thread: sending runs the receiving
        # end's stack too (veth), which would slow this one down.
        with self.changed:
            if len(self.held) >= HELD_MAX:
                if entry is packet:
                    packet.drop()
                return
            heapq.heappush(self.held, (time.monotonic() + wait, next(self.order), entry))
            if self.held[0][2] is entry:
                self.changed.notify()

    def send(self, entry: bytes | Any) -> None:
        if not isinstance(entry, bytes):
            entry.accept()
            return
        version = entry[0] >> 4
        if version == 4:
            to = socket.inet_ntop(socket.AF_INET, entry[16:20])
        else:
            to = socket.inet_ntop(socket.AF_INET6, entry[24:40])
        try:
            self.senders[version].sendto(entry, (to, 0))
        except (OSError, KeyError):
            pass  # lost, as it would be on a full or failing link

    def release(self) -> None:
        """Sends each held packet when due; once stopping, all of them at once."""
        while True:
            with self.changed:
                while not self.stopping and (not self.held or self.held[0][0] > time.monotonic()):
                    self.changed.wait(self.held[0][0] - time.monotonic() if self.held else None)
                if self.stopping:
                    due, self.held = self.held, []
                else:
                    now = time.monotonic()
                    due = []
                    while self.held and self.held[0][0] <= now:
                        due.append(heapq.heappop(self.held))
            for _, _, entry in sorted(due, key=lambda held: held[:2]):
                self.send(entry)
            if self.stopping:
                return

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify()


def listen(delay_ms: float, jitter_ms: float, loss_percent: float, device: str) -> None:
    """Binds the first free queue of ``QUEUES``, says ``queue N`` on stdout, then delays and
    drops what arrives until stdin closes; then sends the held packets and ends."""
    import fnfqueue

    connection = fnfqueue.Connection(packet_size=PACKET_BUFFER)
    for number in QUEUES:
        try:
            queue = connection.bind(number)
            break
        except OSError:
            continue
    else:
        raise SystemExit(f"no free NFQUEUE in {QUEUES}")
    queue.set_mode(fnfqueue.MAX_PAYLOAD, fnfqueue.COPY_PACKET)
    queue.set_maxlen(HELD_MAX)
    # Room for bursts: when the socket's buffer fills, the kernel drops the packets it could
    # not report.
    with socket.fromfd(connection._conn.fd, socket.AF_NETLINK, socket.SOCK_RAW) as netlink:
        netlink.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 32 << 20)
    mtu = int(Path(f"/sys/class/net/{device}/mtu").read_text())
    holder = Holder(delay_ms, jitter_ms, loss_percent, device, mtu)
    # A daemon: should this thread fail, the process ends, the queue goes and the rule's
    # --queue-bypass lets packets through rather than leaving them queued for nobody.
    releaser = threading.Thread(target=holder.release, name="release", daemon=True)
    releaser.start()

    def stop_at_end_of_stdin() -> None:
        """The rules are gone by then: reads what is still queued (until no packet came for
        ``DRAINED_AFTER`` seconds), sends every copy held, and closes the queue."""
        sys.stdin.read()
        holder.stop()
        seen = -1
        while seen != holder.taken:
            seen = holder.taken
            time.sleep(DRAINED_AFTER)
        releaser.join()
        connection.close()

    threading.Thread(target=stop_at_end_of_stdin, name="stdin", daemon=True).start()
    print(f"queue {number}", flush=True)
    while True:
        try:
            for packet in connection:
                holder.take(packet)
            return
        except fnfqueue.BufferOverflowException:
            connection.reset()
        except Exception as error:
            # fnfqueue's word for the kernel's answer to a verdict for a packet no longer
            # queued (ENOENT): when the rule's table goes at exit, the kernel drops what is
            # still queued. Copies of those are sent all the same; go on.
            if not str(error).startswith("Hmm:"):
                raise


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m chaos.netem",
        description="The NFQUEUE listener of chaos.netem.Netem: run it inside the namespace.",
    )
    parser.add_argument("--delay-ms", type=float, default=0)
    parser.add_argument("--jitter-ms", type=float, default=0)
    parser.add_argument("--loss-percent", type=float, default=0)
    parser.add_argument("--device", required=True)
    args = parser.parse_args(argv)
    listen(args.delay_ms, args.jitter_ms, args.loss_percent, args.device)


if __name__ == "__main__":
    main()
