"""`watch` shows what it reads as data (issue 44, item 6): stored values that carry HTML or
script (a run's seed, the scenario's name, a name chosen in a round, a model's reply) render in
headless Chromium as text, with no live injected element; the page's Content-Security-Policy
forbids inline script and event handlers (a handler injected on purpose does not run); a request
for another `Host` (DNS rebinding) is refused; one experiment whose store is damaged is shown as
damaged beside the others, whose runs still show; a tampered `runs.summary` costs nothing but a
note (no server traceback, state.json answers 200)."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any
from urllib.error import HTTPError

import pytest
from cdp import Page, browser
from helpers import run_experiment
from test_watch_browser import shots

from agentsim.games.naming import NamingGame
from agentsim.store import DATABASE
from agentsim.watch import Watcher

pytestmark = pytest.mark.slow  # a browser

HOSTILE = {
    "scenario": "<img src=x onerror=\"window.pwned='scenario'\">",
    "backend": "<script>window.pwned='backend'</script>",
    "seed": "<img src=x onerror=window.pwned='seed'>",
    "stop_reason": "<svg onload=window.pwned='stop'></svg>",
    "name": "<img src=y onerror=window.pwned='name'>",
    "reply": "</pre><img src=z onerror=window.pwned='reply'>",
}

# What a page must never hold: an element from the data, or an attribute that runs script.
INJECTED = """(() => ({
  pwned: window.pwned ?? null,
  handlers: [...document.querySelectorAll("*")].flatMap((node) => [...node.attributes].filter((a) => /^on/i.test(a.name))
    .map((a) => `${node.tagName}.${a.name}`)),
  elements: [...document.querySelectorAll("img, iframe, object, embed, script:not([src='watch.js']), main svg svg, main foreignObject")]
    .map((node) => node.outerHTML.slice(0, 80)),
  text: document.body.innerText,
}))()"""


def build(root: Path) -> dict[str, Path]:
    """Three experiments: one as recorded, one whose values carry HTML and script, one whose
    store is damaged (a `runs` value of the wrong type, an experiment value that is not JSON)."""
    good = root / "good"
    run_experiment(NamingGame(agents=6, max_rounds=6, committed=2, stop_at="none"), good, runs=2)
    hostile, damaged = root / "hostile", root / "damaged"
    for target in (hostile, damaged):
        target.mkdir()
        shutil.copy(good / DATABASE, target / DATABASE)
    with sqlite3.connect(hostile / DATABASE) as connection:
        for key in ("scenario", "backend"):
            connection.execute("UPDATE experiment SET value = ? WHERE key = ?", (json.dumps(HOSTILE[key]), key))
        connection.execute("UPDATE runs SET seed = ? WHERE run = 1", (HOSTILE["seed"],))
        connection.execute("UPDATE runs SET stop_reason = ?, summary = '{' WHERE run = 2", (HOSTILE["stop_reason"],))
        stats = json.loads(connection.execute("SELECT stats FROM rounds WHERE run = 2 AND round = 1").fetchone()[0])
        stats["productions"][HOSTILE["name"]] = 3
        connection.execute("UPDATE rounds SET stats = ? WHERE run = 2 AND round = 1", (json.dumps(stats),))
        connection.execute("UPDATE decisions SET reply = ? WHERE run = 2 AND t = (SELECT MIN(t) FROM encounters "
                           "WHERE run = 2 AND round = 1) AND attempt = 0", (HOSTILE["reply"],))
    with sqlite3.connect(damaged / DATABASE) as connection:
        connection.execute("UPDATE runs SET replicate = 'x', summary = '[1, 2]' WHERE run = 1")
        connection.execute("UPDATE runs SET summary = '{\"runs\": \"x\"}' WHERE run = 2")
        connection.execute("UPDATE experiment SET value = '{' WHERE key = 'seed'")
    return {"good": good, "hostile": hostile, "damaged": damaged}


def test_a_damaged_experiment_is_shown_beside_the_others(tmp_path: Path) -> None:
    build(tmp_path)
    state = Watcher(tmp_path, min_interval_s=0).state()
    json.dumps(state)  # the page's JSON, whatever the stores held
    by = {experiment["where"]: experiment for experiment in state["experiments"]}
    assert set(by) == {"good", "hostile", "damaged"}
    assert [run["status"] for run in by["good"]["runs"]] == ["done", "done"] and "figures" in by["good"]["runs"][0]
    first, second = by["hostile"]["runs"]
    assert first["status"] == "damaged" and "seed" in first["damaged"]  # named, not a traceback
    assert second["status"] == "done" and "damaged" in second["note"] and second["figures"]["lines"]
    assert by["damaged"]["damaged"] == "unreadable experiment values: seed"
    assert by["damaged"]["runs"][0]["status"] == "damaged" and "replicate" in by["damaged"]["runs"][0]["damaged"]
    assert by["damaged"]["runs"][1]["status"] == "done"  # its other run still shows


def request(url: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    call = urllib.request.Request(url, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(call, timeout=30) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_hostile_values_render_as_text_under_a_policy_that_runs_no_inline_script(tmp_path: Path) -> None:
    browser()
    shots().mkdir(parents=True, exist_ok=True)
    root = tmp_path / "results"
    root.mkdir()
    build(root)
    watch = subprocess.Popen([sys.executable, "-m", "agentsim", "watch", str(root), "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watch.stdout is not None
        line = watch.stdout.readline()
        url = line.split("open ")[1].split()[0]
        port = int(url.rstrip("/").rsplit(":", 1)[1])

        status, headers, body = request(url)
        policy = headers["Content-Security-Policy"]
        assert status == 200 and b"<script>" not in body and b"onerror" not in body.lower()
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy and "default-src 'none'" in policy
        status, headers, body = request(url + "state.json")
        assert status == 200 and len(json.loads(body)["experiments"]) == 3
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost:9000"):  # (an SSH forward to another port)
            assert request(url + "state.json", host)[0] == 200
        for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1.nip.io:{port}", f"localhost.evil.example:{port}",
                     "127.0.0.2:80"):  # DNS rebinding: a name the attacker's page is served under
            status, _, body = request(url + "state.json", host)
            assert status == 421 and b"experiments" not in body, host

        async def look() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
            async with Page(tmp_path / "profile") as page:
                await page.open(url)
                for _ in range(300):
                    if await page.evaluate("Number(document.body.dataset.polls || 0) >= 2"):
                        break
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.5)  # an injected image would have failed to load and fired by now
                shown = await page.evaluate(INJECTED)
                # the prompts and replies of the round whose reply was tampered with
                await page.evaluate("window.agentsimWatch.openCalls('hostile', 2, 1, 'round')")
                for _ in range(300):
                    if await page.evaluate("document.getElementById('drill').dataset.loaded !== 'false'"):
                        break
                    await asyncio.sleep(0.1)
                await asyncio.sleep(0.5)
                drilled = await page.evaluate(INJECTED)
                await page.screenshot(shots() / "watch-hostile.png")
                # The policy itself: a handler put into the page on purpose does not run.
                await page.evaluate("document.body.insertAdjacentHTML('beforeend', "
                                    "'<img src=nowhere onerror=\"window.__csp = 1\">')")
                await asyncio.sleep(0.8)
                csp = await page.evaluate("({ran: window.__csp ?? null})")
                return shown, drilled, csp

        shown, drilled, csp = asyncio.run(look())
    finally:
        watch.terminate()
        watch.wait(10)
        errors = watch.stderr.read() if watch.stderr else ""
        for stream in (watch.stdout, watch.stderr):
            if stream is not None:
                stream.close()
    for picture in (shown, drilled):
        assert picture["pwned"] is None and picture["handlers"] == [] and picture["elements"] == [], picture
    for key in ("scenario", "backend", "stop_reason", "name"):
        assert HOSTILE[key] in shown["text"], key
    assert "seed" in shown["text"] and "damaged" in shown["text"]  # the run whose seed is not a number
    assert HOSTILE["reply"] in drilled["text"]  # the reply as it was recorded, as text
    assert csp["ran"] is None  # the Content-Security-Policy blocked an inline handler
    assert "Traceback" not in errors and errors.strip() == "", errors

