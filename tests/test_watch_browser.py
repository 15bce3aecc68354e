"""`python -m agentsim watch DIR` in a real browser (issue 39): a run records in one process,
`watch` serves its page from another, and headless Chromium keeps the page open while the test
reads what it shows. The figures change while the run records, the page shows the finished
state after, and the directory's files are byte-identical before and after `watch` has read them
(the run's own writes aside: compared once the run has ended). A naming game on a ring (the
graph coloured by each agent's latest choice) and a Prisoner's Dilemma, both over real HTTP from
the stand-in server, slowed so that a run lasts seconds.

Screenshots go to AGENTSIM_SCREENSHOTS=DIR when set (to look at them), else to the test's tmp."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import pytest
from cdp import Page, browser
from helpers import ROOT
from servers import ServerThread, standin_server  # noqa: F401  (the fixture)

from agentsim.llm.base import Request
from agentsim.llm.standin import StandInModel
from agentsim.store import Store

pytestmark = pytest.mark.slow  # two runs of seconds each, watched

# What the page shows, read from its DOM (the data attributes the page writes beside what it draws).
READ = """(() => {
  const section = document.querySelector("section.experiment");
  return {polls: Number(document.body?.dataset.polls || 0), recording: section ? section.dataset.recording : null,
    runs: [...document.querySelectorAll("article.run")].map((card) => ({
      run: Number(card.dataset.run), status: card.dataset.status, round: Number(card.dataset.round),
      calls: card.dataset.calls === "" ? null : Number(card.dataset.calls),
      success: card.dataset.success === "" ? null : Number(card.dataset.success),
      lines: JSON.parse(card.dataset.lines || "[]"),
      shares: [...card.querySelectorAll(".share[data-name]")].map((bar) => [bar.dataset.name, Number(bar.dataset.share)]),
      points: Number(card.querySelector(".success-chart")?.dataset.points ?? -1),
      coloured: Number(card.querySelector(".graph")?.dataset.coloured ?? -1),
      text: card.innerText}))};
})()"""


class DilemmaByText:
    """The dilemma's answers over HTTP, where the server sees the prompt's text only (the
    in-process stand-in reads the call's situation): C, or D for about a third of prompts."""

    def answer(self, request: Request) -> str | None:
        text = request.messages[-1].content
        if "C or D" not in text:
            return None
        return "D" if zlib.crc32(text.encode()) % 3 == 0 else "C"


def files(directory: Path) -> dict[str, bytes]:
    return {path.relative_to(directory).as_posix(): path.read_bytes() for path in sorted(directory.rglob("*")) if path.is_file()}


def shots() -> Path:
    return Path(os.environ.get("AGENTSIM_SCREENSHOTS") or ROOT / ".pytest_cache" / "watch-screenshots")


async def follow(run: subprocess.Popen[str], out: Path, profile: Path, name: str) -> dict[str, Any]:
    """Watch `out` while `run` records and after: what the page showed during the run, at
    its end, and the directory's files before and after `watch` read the ended run."""
    for _ in range(600):
        if (out / "agentsim.db").exists() or run.poll() is not None:
            break
        await asyncio.sleep(0.05)
    watch = subprocess.Popen([sys.executable, "-m", "agentsim", "watch", str(out), "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watch.stdout is not None
        line = await asyncio.to_thread(watch.stdout.readline)
        assert "open http://127.0.0.1:" in line, line + (watch.stderr.read() if watch.stderr else "")
        url = line.split("open ")[1].split()[0]
        where = shots()
        where.mkdir(parents=True, exist_ok=True)
        async with Page(profile) as page:
            await page.open(url + "?every=250")
            during: list[dict[str, Any]] = []
            mid_shot = False
            while run.poll() is None:
                shown = await page.evaluate(READ)
                if shown["runs"] and any(card["status"] == "running" for card in shown["runs"]):
                    during.append(shown)
                    if not mid_shot and any(card["status"] == "running" and card["round"] >= 3 for card in shown["runs"]):
                        await page.screenshot(where / f"watch-{name}-running.png")
                        mid_shot = True
                await asyncio.sleep(0.2)
            assert run.wait() == 0, run.stderr.read() if run.stderr else ""
            before = files(out)  # the run's last write is done: from here, only watch reads DIR
            deadline = time.monotonic() + 30
            while True:
                shown = await page.evaluate(READ)
                if (shown["runs"] and all(card["status"] != "running" for card in shown["runs"])
                        and shown["recording"] == "false") or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            polls = shown["polls"]
            while shown["polls"] < polls + 6 and time.monotonic() < deadline + 10:  # the page reads the ended run again
                await asyncio.sleep(0.2)
                shown = await page.evaluate(READ)
            after = files(out)
            await page.screenshot(where / f"watch-{name}-done.png")
        return {"during": during, "final": shown, "before": before, "after": after}
    finally:
        watch.terminate()
        watch.wait(10)
        if run.poll() is None:
            run.kill()
            run.wait(10)
        for stream in (watch.stdout, watch.stderr, run.stderr):
            if stream is not None:
                stream.close()


def start_run(scenario: str, backend: str, out: Path, *settings: str, runs: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentsim", str(ROOT / "scenarios" / scenario), "--backend", backend,
                             "--runs", str(runs), "--no-live", "--no-cache", "--checkpoint-seconds", "0", "--out", str(out),
                             *(part for setting in settings for part in ("--set", setting))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def updated_while_recording(during: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """The distinct (round, calls) pictures the page showed of the first run while it ran."""
    seen = [(card["round"], card["calls"]) for shown in during for card in shown["runs"]
            if card["run"] == 1 and card["status"] == "running" and card["calls"] is not None]
    return sorted(set(seen))


def check_unchanged(watched: dict[str, Any]) -> None:
    before, after = watched["before"], watched["after"]
    assert "agentsim.db" in before
    assert before.keys() == after.keys(), f"watch left files in DIR: {sorted(after.keys() ^ before.keys())}"
    assert all(before[name] == after[name] for name in before), [name for name in before if before[name] != after[name]]


def test_watch_follows_a_naming_game_on_a_ring(tmp_path: Path, standin_server: Any) -> None:
    browser()
    server: ServerThread = standin_server(capacity=2, service_time_s=0.04)
    out = tmp_path / "naming"
    run = start_run("naming_game.py", f"openai:stand-in@{server.url}/v1", out, "agents=10", "max_rounds=40",
                    "topology=ring", "topology_degree=2", "pairing=network")
    watched = asyncio.run(follow(run, out, tmp_path / "profile", "naming"))

    pictures = updated_while_recording(watched["during"])
    assert len(pictures) >= 3, f"the page did not update while the run recorded: {pictures}"
    rounds = [round_ for round_, _calls in pictures]
    assert rounds[-1] > rounds[0]

    summary = json.loads((out / "summary.json").read_text())["runs"][0]
    (final,) = watched["final"]["runs"]
    assert final["status"] == "done" and watched["final"]["recording"] == "false"
    assert final["round"] == summary["rounds"] and final["calls"] == summary["calls"]
    assert final["success"] == pytest.approx(summary["final_success_rate"])
    assert final["points"] >= min(summary["rounds"], 2)  # the success chart's line
    lines = dict(final["lines"])
    assert lines["agreement"].startswith(f"{summary['final_agreement']:.0%}")
    shares = dict(final["shares"])
    assert shares[summary["leading_name"]] == max(shares.values()) > 0
    assert final["coloured"] == 10  # every agent of the ring coloured by its latest choice
    assert summary["stop_reason"].replace("_", " ") in final["text"]
    check_unchanged(watched)


def test_watch_follows_a_prisoners_dilemma(tmp_path: Path, standin_server: Any) -> None:
    browser()
    server: ServerThread = standin_server(capacity=2, service_time_s=0.25)
    server.server.model = StandInModel([DilemmaByText()])  # the server answers the dilemma's prompts
    out = tmp_path / "dilemma"
    run = start_run("prisoners_dilemma.py", f"openai:stand-in@{server.url}/v1", out, "agents=6", "max_rounds=12")
    watched = asyncio.run(follow(run, out, tmp_path / "profile", "dilemma"))

    pictures = updated_while_recording(watched["during"])
    assert len(pictures) >= 3, f"the page did not update while the run recorded: {pictures}"

    summary = json.loads((out / "summary.json").read_text())["runs"][0]
    (final,) = watched["final"]["runs"]
    assert final["status"] == "done" and final["round"] == summary["rounds"] == 12
    assert final["calls"] == summary["calls"] > 0
    assert final["success"] is None  # the dilemma declares no success rate: none shown, not 0%
    store = Store(out)
    (last,) = [json.loads(stats) for (stats,) in store.rows("SELECT stats FROM rounds WHERE run = 1 AND round = 11")]
    store.close()
    assert dict(final["shares"])["C"] == pytest.approx(last["moves"]["choose"]["shares"].get("C", 0))  # the last round's
    assert dict(final["lines"])["mean payoff"].endswith("per player-round in round 12")
    assert final["coloured"] == -1  # anyone may meet anyone: no graph
    check_unchanged(watched)
