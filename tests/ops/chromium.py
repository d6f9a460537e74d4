"""Headless Chromium (Debian's ``chromium``) driven over the Chrome DevTools protocol: open a
page, evaluate JavaScript in it, save screenshots. One browser process per ``Chromium``, with
a throwaway profile; no WebDriver."""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from typing import Any

import websocket

from wireserver.testing import wait_for

BINARIES = ("chromium", "chromium-browser", "google-chrome")


def find_binary() -> str | None:
    for name in BINARIES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Chromium:
    def __init__(self, binary: str, width: int = 1400, height: int = 1000):
        self.profile = tempfile.mkdtemp(prefix="wireserver-chromium-")
        self.process = subprocess.Popen(
            [
                binary,
                "--headless=new",
                "--no-sandbox",  # tests may run as root
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                f"--window-size={width},{height}",
                f"--user-data-dir={self.profile}",
                "--remote-debugging-port=0",
                "--remote-allow-origins=*",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._ids = itertools.count(1)
        try:
            port = self._devtools_port()
            self.socket = websocket.create_connection(
                self._page_target(port), timeout=30, suppress_origin=True
            )
        except BaseException:
            self.close()
            raise

    def _devtools_port(self, timeout: float = 30.0) -> int:
        """Chromium writes the port it chose to ``DevToolsActivePort`` in the profile."""
        path = os.path.join(self.profile, "DevToolsActivePort")

        def written() -> int | None:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with code {self.process.returncode}")
            try:
                with open(path, encoding="ascii") as handle:
                    first = handle.readline().strip()
                return int(first) if first else None
            except (FileNotFoundError, ValueError):
                return None

        return wait_for(written, timeout, interval=0.05, what="chromium's DevTools port")

    @staticmethod
    def _page_target(port: int) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as reply:
            targets = json.load(reply)
        return next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")

    def send(self, method: str, **params: Any) -> dict:
        """One DevTools command; the events that arrive before its answer are dropped."""
        message_id = next(self._ids)
        self.socket.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") != message_id:
                continue
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message["result"]

    def open(self, url: str) -> None:
        self.send("Page.enable")
        self.send("Page.navigate", url=url)

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float, what: str) -> Any:
        """Evaluate ``expression`` until it is truthy; its last value goes in the error."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except RuntimeError as exc:  # the page is still loading
                value = str(exc)
            else:
                if value:
                    return value
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}; last value {value!r}")

    def screenshot(self, path: str) -> None:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        with open(path, "wb") as handle:
            handle.write(base64.b64decode(data["data"]))

    def close(self) -> None:
        socket = getattr(self, "socket", None)
        if socket is not None:
            socket.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
