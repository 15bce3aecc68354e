"""Headless Chromium driven over the DevTools protocol, for tests of pages that change while
they are open (`python -m agentsim watch`): one page stays loaded while the test reads what it
shows, again and again, and takes screenshots. The protocol's websocket is aiohttp's (already a
dependency): no Playwright, no Selenium, no browser download; the browser is Debian's
`chromium-headless-shell` or `chromium`, which `.ci/run` installs."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")


def browser() -> str:
    """The system's headless Chromium; in CI (AGENTSIM_REQUIRE_BROWSER, CI) a missing one fails
    the test, elsewhere it is skipped with the command that installs one."""
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        if os.environ.get("AGENTSIM_REQUIRE_BROWSER") or os.environ.get("CI"):
            pytest.fail("no headless Chromium: apt-get install -y chromium-headless-shell (.ci/run does)")
        pytest.skip("no headless Chromium here: apt-get install -y chromium-headless-shell")
    return found


class Page:
    """One browser tab: `open(url)`, `evaluate(expression)` (its JSON value), `screenshot(path)`."""

    def __init__(self, profile: Path, *, width: int = 1280, height: int = 900) -> None:
        self.profile, self.width, self.height = profile, width, height
        self.mobile = False
        self.process: subprocess.Popen[str] | None = None
        self.session: aiohttp.ClientSession | None = None
        self.socket: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)

    async def __aenter__(self) -> Page:
        self.process = subprocess.Popen(
            [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-port=0",
             f"--user-data-dir={self.profile}", f"--window-size={self.width},{self.height}", "about:blank"],
            # A group of its own: Debian's chromium-headless-shell is a shell script that starts the
            # browser as its child, which stopping the script alone would leave running (and busy).
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        assert self.process.stderr is not None
        line = ""
        for _ in range(200):  # "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
            line = await asyncio.to_thread(self.process.stderr.readline)
            if "DevTools listening on" in line or not line:
                break
        found = re.search(r"ws://127\.0\.0\.1:(\d+)/", line)
        assert found, f"Chromium did not start its DevTools server: {line!r}"
        self.session = aiohttp.ClientSession()
        async with self.session.get(f"http://127.0.0.1:{found.group(1)}/json/list") as response:
            targets = await response.json(content_type=None)
        page = next(target for target in targets if target.get("type") == "page")
        self.socket = await self.session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=64 * 1024 * 1024)
        await self.send("Page.enable")
        await self.send("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height, deviceScaleFactor=1,
                        mobile=False)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.socket is not None:
            await self.socket.close()
        if self.session is not None:
            await self.session.close()
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
            if self.process.stderr is not None:
                self.process.stderr.close()

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self.socket is not None
        call = next(self.ids)
        await self.socket.send_str(json.dumps({"id": call, "method": method, "params": params}))
        while True:
            message = await asyncio.wait_for(self.socket.receive(), 60)
            if message.type != aiohttp.WSMsgType.TEXT:
                raise RuntimeError(f"the DevTools connection closed: {message!r}")
            answer = json.loads(message.data)
            if answer.get("id") == call:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return dict(answer.get("result") or {})

    async def open(self, url: str) -> None:
        """Go to `url` and wait until it has loaded."""
        await self.send("Page.navigate", url=url)
        for _ in range(300):
            if await self.evaluate(f"location.href === {json.dumps(url)} && document.readyState === 'complete'"):
                return
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{url} did not load")

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page's script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def screenshot(self, path: Path, *, full_page: bool = True) -> Path:
        """A PNG of the page (its whole height with `full_page`)."""
        height = self.height
        if full_page:
            height = max(self.height, int(await self.evaluate("document.documentElement.scrollHeight")))
            await self.send("Emulation.setDeviceMetricsOverride", width=self.width, height=height, deviceScaleFactor=1,
                            mobile=self.mobile)
        shot = await self.send("Page.captureScreenshot", format="png")
        if full_page:
            await self.send("Emulation.setDeviceMetricsOverride", width=self.width, height=self.height,
                            deviceScaleFactor=1, mobile=self.mobile)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    async def click(self, x: float, y: float) -> None:
        """A left click at (x, y), in the page's CSS pixels, as a user's mouse gives it."""
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)

    async def resize(self, width: int, height: int, *, mobile: bool = False) -> None:
        """The viewport as a screen of this size shows it (a phone: `mobile`)."""
        self.width, self.height, self.mobile = width, height, mobile
        await self.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)
