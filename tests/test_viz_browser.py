"""The Mesa SolaraViz page of a `PopulationModel` in a real browser (issue 39): the lines
docs/mesa.md gives, served by `solara run`, opened in headless Chromium, stepped with its Step
button and rebuilt with Reset, as a Mesa user steps any Mesa model in the browser.

Solara's page loads its scripts from a CDN unless `solara-assets` is installed (the dev extra
brings it): tests never reach the internet, so the test is skipped without it, and the server
runs with its telemetry off and a CDN that is a closed local port."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from cdp import Page, browser
from helpers import ROOT

pytest.importorskip("solara")
pytest.importorskip("solara_assets", reason="Solara's page scripts offline: pip install solara-assets (the dev extra)")
pytestmark = pytest.mark.slow  # Solara's server takes seconds to start

TEXT = "document.body ? document.body.textContent : ''"
CLICK = "[...document.querySelectorAll('button')].find((b) => b.textContent.trim() === {label!r}).click()"


def mesa_lines() -> str:
    """The SolaraViz lines of docs/mesa.md, as written there."""
    text = (ROOT / "docs" / "mesa.md").read_text(encoding="utf-8")
    section = text.split("## Stepping a population in the browser", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def until(page: Page, needle: str, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while True:
        text = str(await page.evaluate(TEXT))
        if needle in text or time.monotonic() > deadline:
            return text
        await asyncio.sleep(0.2)


def test_solaraviz_steps_and_resets_a_population_in_a_browser(tmp_path: Path) -> None:
    browser()
    (tmp_path / "app.py").write_text(mesa_lines(), encoding="utf-8")
    port = free_port()
    # Telemetry off; the CDN Solara falls back on is a closed local port, so that a file missing
    # from solara-assets fails here (and is logged), never fetched from outside.
    env = os.environ | {"SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False", "SOLARA_ASSETS_CDN": "http://127.0.0.1:9/"}
    log = (tmp_path / "solara.log").open("w")
    server = subprocess.Popen([sys.executable, "-m", "solara", "run", "app.py", "--host", "127.0.0.1", "--port", str(port),
                               "--no-open"], cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, (tmp_path / "solara.log").read_text()[-3000:]
            time.sleep(0.5)

        async def drive() -> tuple[str, str, str]:
            async with Page(tmp_path / "profile") as page:
                await page.open(url)
                start = await until(page, "interactions")
                await page.evaluate(CLICK.format(label="Step"))
                await until(page, "round 1 of")
                await page.evaluate(CLICK.format(label="Step"))
                stepped = await until(page, "round 2 of")
                shots = Path(os.environ.get("AGENTSIM_SCREENSHOTS") or tmp_path)
                shots.mkdir(parents=True, exist_ok=True)
                await page.screenshot(shots / "solaraviz-stepped.png", full_page=False)
                await page.evaluate(CLICK.format(label="Reset"))
                reset = await until(page, "round 0 of")
                return start, stepped, reset

        start, stepped, reset = asyncio.run(drive())
    finally:
        server.terminate()
        server.wait(20)
        log.close()
    assert "round 0 of 50, 0 interactions" in start and "10 agents" in start
    assert "round 2 of 50, 10 interactions" in stepped  # two rounds of N/2 = 5 encounters
    assert "calls 20," in stepped and "success" in stepped and "agreement" in stepped  # the family's figures
    assert "Step: 2" in stepped  # Mesa's own step counter agrees
    assert "round 0 of 50, 0 interactions" in reset
    seeds = [re.search(r"seed (\d+)", text).group(1) for text in (stepped, reset)]  # type: ignore[union-attr]
    assert seeds[0] != seeds[1]  # no seed= in the lines: each Reset draws a fresh one, as Mesa's models do
    assert "Could not load URL" not in (tmp_path / "solara.log").read_text()  # nothing asked of the internet
