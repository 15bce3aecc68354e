"""`python -m agentsim watch DIR` in a real browser (issues 39 and 47): a run records in one
process, `watch` serves its page from another, and headless Chromium keeps the page open while
the test reads what it shows, again and again.

For each of the five families (the naming game with a committed minority, networks, SIGN, the
commons, cultural evolution) and a game on the layer (GAMA-Bench's public goods game), one
experiment plays on a stand-in slowed to last seconds, so the page follows it while it records:
every view the family declares is present with numbers that recompute from the store (the
`rounds` lines and the run summaries, read here with SQLite and json), a click on a point of a
chart opens that round's (month's, generation's) prompts and replies as `transcript` prints
them, with re-asks and fallbacks marked as the store records them, the page changes while the
run records, and the directory's files are byte-identical before and after `watch` read the
ended runs. A run killed with SIGKILL is shown as not running, its elapsed time frozen, with
the command that resumes it. The naming game on a ring and a Prisoner's Dilemma go over real
HTTP from the stand-in server.

Screenshots (1280 px and a phone's 390 px) go to AGENTSIM_SCREENSHOTS=DIR when set (to look at
them), else to the test's tmp."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
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

pytestmark = pytest.mark.slow  # runs of seconds each, watched

TESTS = Path(__file__).parent

# What the page shows, read from its DOM (the data attributes the page writes beside what it draws).
READ = """(() => {
  const chart = (box) => ({key: box.dataset.key, title: box.querySelector(".title")?.innerText || "",
    yMin: box.dataset.yMin === "" ? null : Number(box.dataset.yMin),
    yMax: box.dataset.yMax === "" ? null : Number(box.dataset.yMax),
    marks: JSON.parse(box.dataset.marks || "[]"),
    series: [...box.querySelectorAll("svg .line")].map((line) => ({name: line.dataset.series,
                                                                  values: JSON.parse(line.dataset.values || "[]")})),
    legend: Object.fromEntries([...box.querySelectorAll(".legend [data-series]")].map((s) => [s.dataset.series, s.dataset.colour]))});
  const number = (text) => text === undefined || text === "" ? null : Number(text);
  const section = document.querySelector("section.experiment");
  return {polls: Number(document.body?.dataset.polls || 0), recording: section ? section.dataset.recording : null,
    section: section ? section.innerText : "",
    across: [...document.querySelectorAll(".across .chart")].map(chart),
    compareHead: [...document.querySelectorAll("table.compare th")].map((th) => th.innerText),
    compare: [...document.querySelectorAll("table.compare tr[data-group]")].map((tr) => [...tr.cells].map((td) => td.innerText)),
    table: [...document.querySelectorAll("table.runs tr[data-run]")].map((tr) => [...tr.cells].map((td) => td.innerText)),
    notRunning: section?.querySelector("[data-not-running]")?.innerText ?? null,
    runs: [...document.querySelectorAll("article.run")].map((card) => ({
      run: Number(card.dataset.run), status: card.dataset.status, round: Number(card.dataset.round),
      done: number(card.dataset.done), total: number(card.dataset.total), unit: card.dataset.unit, group: card.dataset.group,
      asOf: card.dataset.asOf, elapsed: number(card.dataset.elapsed), calls: number(card.dataset.calls),
      success: number(card.dataset.success),
      heading: card.querySelector("h3").innerText, age: card.querySelector(".age")?.innerText || "",
      progress: card.querySelector(".progress-text")?.innerText || "", bar: card.querySelector(".bar")?.className || "",
      stats: Object.fromEntries([...card.querySelectorAll(".stat")].map((s) => [s.dataset.label,
        {value: number(s.dataset.value), text: s.querySelector(".v").innerText}])),
      charts: [...card.querySelectorAll(".chart")].map(chart),
      shares: [...card.querySelectorAll(".share[data-name]")].map((bar) => [bar.dataset.name, Number(bar.dataset.share)]),
      coloured: Number(card.querySelector("svg.graph")?.dataset.coloured ?? -1),
      graph: number(card.querySelector("svg.graph")?.dataset.nodes),
      texts: [...card.querySelectorAll(".texts dd")].map((dd) => dd.innerText),
      lines: JSON.parse(card.dataset.lines || "[]"),
      text: card.innerText}))};
})()"""

# Where a chart draws the point at x: the page's pixels (the test clicks there as a mouse would).
WHERE = """((run, key, x) => {
  const svg = document.querySelector(`article.run[data-run="${run}"] .chart[data-key="${key}"] svg`);
  svg.scrollIntoView({block: "center"});
  const rect = svg.getBoundingClientRect(), scale = rect.width / Number(svg.getAttribute("width"));
  const left = Number(svg.dataset.left), right = Number(svg.dataset.right);
  const x0 = Number(svg.dataset.xmin), x1 = Number(svg.dataset.xmax);
  return {x: rect.left + (left + (x - x0) / (x1 - x0) * (right - left)) * scale, y: rect.top + rect.height / 2};
})"""

DRILL = """(() => {
  const panel = document.getElementById("drill");
  return {open: !panel.hidden, loaded: panel.dataset.loaded, title: document.getElementById("drill-title").innerText,
    note: document.getElementById("drill-note").innerText, rounds: panel.dataset.rounds || "",
    calls: [...panel.querySelectorAll(".call")].map((call) => ({text: call.querySelector("pre").innerText,
      reask: call.dataset.reask === "true", fallback: call.dataset.fallback === "true", attempt: Number(call.dataset.attempt)}))};
})()"""

# One experiment on the in-process stand-in, each call slowed, so a run lasts seconds; its
# scenario file recorded as the command line records it (watch finds a file's class from it).
SLOW_RUN = r"""
import asyncio, json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from helpers import Quiet
from agentsim.llm.standin import StandInModel
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.scenario_files import load_scenario

class Slow(StandInModel):
    name = "stand-in"
    immediate = False

    def __init__(self, rules, delay):
        super().__init__(rules)
        self.delay = delay
        self.one_at_a_time = None

    async def complete(self, request):  # a server that answers one call at a time, each in `delay` seconds
        self.one_at_a_time = self.one_at_a_time or asyncio.Semaphore(1)
        async with self.one_at_a_time:
            await asyncio.sleep(self.delay)
        return self.answer(request)

file, out, changes, runs, delay = sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
scenario = load_scenario(file)[0].with_params(**{key: tuple(value) if isinstance(value, list) else value
                                                for key, value in changes.items()})
experiment = Experiment(ExperimentConfig(scenario=scenario, out=out, seed=1, runs=runs, checkpoint_seconds=0,
                                         scenario_file=file), Quiet())
experiment.open()
experiment.backends = {"stand-in": Slow(experiment.scenario.standin_part().rules, delay)}
asyncio.run(experiment.run())
"""


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


def start_watch(out: Path) -> tuple[subprocess.Popen[str], str]:
    watch = subprocess.Popen([sys.executable, "-m", "agentsim", "watch", str(out), "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert watch.stdout is not None
    line = watch.stdout.readline()
    assert "open http://127.0.0.1:" in line, line + (watch.stderr.read() if watch.stderr else "")
    return watch, line.split("open ")[1].split()[0]


def stop(*processes: subprocess.Popen[str]) -> None:
    for process in processes:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


async def wait_for(page: Page, condition: str, seconds: float = 30) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = await page.evaluate(condition)
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(0.1)


async def follow(start: Any, out: Path, profile: Path, name: str, *,
                 drill: tuple[str, int] | None = None) -> dict[str, Any]:
    """Watch `out` from before the run that `start()` starts makes it, while it records and
    after: what the page showed while it waited, during the run and at its end, the calls a
    click on chart `drill` (its key, a point's index) opened, and the directory's files
    before and after `watch` read the ended run."""
    watch, url = start_watch(out)
    where = shots()
    where.mkdir(parents=True, exist_ok=True)
    run: subprocess.Popen[str] | None = None
    try:
        async with Page(profile) as page:
            await page.open(url + "?every=250")
            waiting = await wait_for(page, "document.body.dataset.polls >= 1 && document.getElementById('experiments').innerText")
            run = start()
            during: list[dict[str, Any]] = []
            mid_shot = False
            while run.poll() is None:
                shown = await page.evaluate(READ)
                if any(card["status"] == "running" for card in shown["runs"]):
                    during.append(shown)
                    if not mid_shot and any(card["status"] == "running" and (card["done"] or 0) >= 1 for card in shown["runs"]):
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
            await page.screenshot(where / f"watch-{name}-done.png")
            opened = None
            if drill is not None:
                key, index = drill
                card = shown["runs"][0]
                chart = next(chart for chart in card["charts"] if chart["key"] == key)
                x = chart["series"][0]["values"][index][0]
                at = await page.evaluate(f"{WHERE}({card['run']}, {json.dumps(key)}, {x})")
                await page.click(at["x"], at["y"])
                assert await wait_for(page, "document.getElementById('drill').dataset.loaded !== 'false' && "
                                            "document.getElementById('drill').dataset.loaded"), "the click opened nothing"
                opened = await page.evaluate(DRILL) | {"run": card["run"], "x": x}
                await page.screenshot(where / f"watch-{name}-calls.png", full_page=False)
                await page.evaluate("document.getElementById('drill-close').click()")
            await page.resize(390, 844, mobile=True)
            await asyncio.sleep(0.6)
            await page.screenshot(where / f"watch-{name}-phone.png")
            after = files(out)
        return {"waiting": waiting, "during": during, "final": shown, "before": before, "after": after, "drill": opened,
                "watch_errors": ""}
    finally:
        stop(watch)
        if run is not None:
            if run.poll() is None:
                run.kill()
                run.wait(10)
            if run.stderr is not None:
                run.stderr.close()


def start_run(scenario: str, backend: str, out: Path, *settings: str, runs: int = 1) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "agentsim", str(ROOT / "scenarios" / scenario), "--backend", backend,
                             "--runs", str(runs), "--no-live", "--no-cache", "--checkpoint-seconds", "0", "--out", str(out),
                             *(part for setting in settings for part in ("--set", setting))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def start_slow_run(scenario: str, out: Path, changes: dict[str, Any], *, runs: int, delay: float) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(TESTS), str(ROOT / "scenarios" / scenario), str(out),
                             json.dumps(changes), str(runs), str(delay)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def updated_while_recording(during: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The distinct pictures (progress, calls) the page showed of the first run while it ran."""
    seen = [(card["done"], card["round"], card["calls"]) for shown in during for card in shown["runs"]
            if card["run"] == 1 and card["status"] == "running" and card["calls"] is not None]
    return sorted(set(seen), key=str)


def check_unchanged(watched: dict[str, Any]) -> None:
    before, after = watched["before"], watched["after"]
    assert "agentsim.db" in before
    assert before.keys() == after.keys(), f"watch left files in DIR: {sorted(after.keys() ^ before.keys())}"
    assert all(before[name] == after[name] for name in before), [name for name in before if before[name] != after[name]]


# --- what the store says, read here ---------------------------------------------------------------
def database(out: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"{(out / 'agentsim.db').as_uri()}?immutable=1", uri=True)


def store_rounds(out: Path, run: int) -> dict[int, dict[str, Any]]:
    with database(out) as connection:
        return {round_: json.loads(stats) for round_, stats in
                connection.execute("SELECT round, stats FROM rounds WHERE run = ? ORDER BY round", (run,))}


def summaries(out: Path) -> dict[int, dict[str, Any]]:
    return {row["run"]: row for row in json.loads((out / "summary.json").read_text())["runs"]}


def chart(card: dict[str, Any], key: str) -> dict[str, Any]:
    found = [each for each in card["charts"] if each["key"] == key]
    assert found, f"run {card['run']} shows no chart {key!r}: {[each['key'] for each in card['charts']]}"
    return found[0]


def series(shown: dict[str, Any], name: str) -> list[list[float]]:
    found = [each for each in shown["series"] if each["name"] == name]
    assert found, f"{shown['key']} has no series {name!r}: {[each['name'] for each in shown['series']]}"
    return found[0]["values"]


def same(values: list[list[float]], expected: list[tuple[float, float]], tolerance: float = 1e-9) -> None:
    assert [x for x, _ in values] == [x for x, _ in expected], (values, expected)
    assert all(y == pytest.approx(want, abs=tolerance) for (_, y), (_, want) in zip(values, expected, strict=True)), \
        (values, expected)


def check_drill(out: Path, opened: dict[str, Any], *, round_base: int = 0) -> None:
    """The click showed the round's recorded calls as `transcript` prints them, re-asks and
    fallbacks marked as the store records them."""
    assert opened is not None and opened["open"] and opened["loaded"] == "true", opened
    assert opened["calls"], opened
    first, last = (int(part) for part in opened["rounds"].split(","))
    printed = subprocess.run([sys.executable, "-m", "agentsim", "transcript", str(out), "--run", str(opened["run"]),
                              "--round", str(first)], capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    head = opened["calls"][0]["text"].strip()
    assert head.splitlines()[0].startswith(f"=== run {opened['run']} ") and head in printed.stdout, head[:300]
    assert "[reply, attempt 0]" in head or "→ read as" in head  # a reply (or a rule's move) as recorded
    with database(out) as connection:
        rows = connection.execute(
            "SELECT d.attempt, d.fallback IS 1, d.reply IS NOT NULL FROM decisions d JOIN encounters e ON e.run = d.run "
            "AND e.t = d.t WHERE d.run = ? AND e.round BETWEEN ? AND ? AND (d.reply IS NOT NULL OR d.context IS NOT NULL)",
            (opened["run"], first - round_base, last - round_base)).fetchall()
    if len(rows) <= len(opened["calls"]):  # every call shown: the marks count as the store does
        assert len(rows) == len(opened["calls"])
        assert sum(attempt > 0 for attempt, _, _ in rows) == sum(call["reask"] for call in opened["calls"])
        assert sum(bool(fell) for _, fell, _ in rows) == sum(call["fallback"] for call in opened["calls"])


# --- the five families and a game on the layer -----------------------------------------------------
def check_naming(out: Path, final: dict[str, Any]) -> None:
    done = summaries(out)
    for card in final["runs"]:
        summary, rounds = done[card["run"]], store_rounds(out, card["run"])
        shares = chart(card, "shares")
        for line in shares["series"]:
            expected = []
            for round_, stats in sorted(rounds.items()):
                counts = {name: count for name, count in stats["productions"].items() if name != "null"}
                if sum(counts.values()):
                    expected.append((round_, counts.get(line["name"], 0) / sum(counts.values())))
            same(line["values"], expected)
        same(series(chart(card, "success"), "success"),
             [(round_, stats["success_rate"]) for round_, stats in sorted(rounds.items())])
        alternative = chart(card, "alternative")
        same(alternative["series"][0]["values"], [(round_, stats["alternative_share"]) for round_, stats in sorted(rounds.items())
                                                  if stats["alternative_share"] is not None])
        assert alternative["marks"] == ([summary["flip_round"]] if summary["flip"] else [])
        assert card["stats"]["agreement"]["value"] == pytest.approx(summary["final_agreement"], abs=1e-4)
        assert len(shares["series"]) >= 2 and card["unit"] == "round"
    success = next(each for each in final["across"] if each["key"] == "success")
    first = [store_rounds(out, run)[0]["success_rate"] for run in done]
    assert series(success, "success")[0] == [0, pytest.approx(sum(first) / len(first))]  # the mean across runs at round 0


def check_networks(out: Path, final: dict[str, Any]) -> None:
    done = summaries(out)
    for card in final["runs"]:
        topology = done[card["run"]]["topology"]
        assert topology in card["heading"] and card["group"] == topology and card["graph"] == 10
    assert final["compareHead"][:2] == ["group", "runs"] and "agreement round" in final["compareHead"]
    column = final["compareHead"].index("agreement round")
    for row in final["compare"]:
        rounds = [summary["agreement_round"] for summary in done.values() if summary["topology"] == row[0]]
        known = [value for value in rounds if value is not None]
        assert row[column].startswith(f"{sum(known) / len(known):.3g}" if known else "–"), (row, rounds)
    assert {row[0] for row in final["compare"]} == {summary["topology"] for summary in done.values()}


def check_sign(out: Path, final: dict[str, Any], during: list[dict[str, Any]]) -> None:
    done = summaries(out)
    first = next(card for shown in during for card in shown["runs"] if card["status"] == "running")
    assert "Schema, N=6, K=5, α=0.75" in first["heading"]  # the cell, from the first reading
    for card in final["runs"]:
        same(series(chart(card, "agreement"), "agreement"),
             [(index + 1, value) for index, value in enumerate(done[card["run"]]["agreement_by_round"])], 1e-4)
    colours: dict[str, set[str]] = {}
    for card in final["runs"]:
        for name, colour in chart(card, "shares")["legend"].items():
            colours.setdefault(name, set()).add(colour)
    assert colours and all(len(each) == 1 for each in colours.values()), colours  # one colour per name in every run
    assert len(set().union(*colours.values())) == len(colours)


def check_commons(out: Path, final: dict[str, Any], during: list[dict[str, Any]]) -> None:
    summary = summaries(out)[1]
    (card,) = final["runs"]
    assert card["unit"] == "month" and card["total"] == 3
    assert any(shown["runs"][0]["progress"].startswith("month ") for shown in during), "progress in months while it ran"
    assert not any("round" in shown["runs"][0]["progress"] for shown in during)  # never in steps
    same(series(chart(card, "stock"), "stock at the month's start"),
         [(month + 1, stock) for month, stock in enumerate(summary["stock"])])
    harvest = chart(card, "harvest")
    for name in summary["gains"]:
        same(series(harvest, name), [(month + 1, catches.get(name, 0)) for month, catches in enumerate(summary["catches"])])
    same(series(chart(card, "limit"), "agreed limit"),
         [(month + 1, limit) for month, limit in enumerate(summary["limits"]) if limit is not None])
    for label, key in (("efficiency", "efficiency"), ("equality", "equality"), ("gain", "gain"), ("over-usage", "over_usage")):
        assert card["stats"][label]["value"] == pytest.approx(summary[key], abs=1e-4), label
    assert card["stats"]["survival"]["value"] == summary["survival_months"]
    assert ("survived" if summary["survived"] else "collapsed") in card["progress"]


def check_evolution(out: Path, final: dict[str, Any]) -> None:
    summary = summaries(out)[1]
    (card,) = final["runs"]
    generations = summary["generations"]
    same(series(chart(card, "resources"), "mean final payoff"), [(g["generation"], g["mean_payoff"]) for g in generations])
    same(chart(card, "giving")["series"][0]["values"],
         [(g["generation"], g["donation_fraction"]) for g in generations if g["donation_fraction"] is not None])
    roster = [line for _, line in sorted(store_rounds(out, 1).items()) if "roster" in line][-1]["roster"]
    best = max(roster, key=lambda entry: entry["score"])
    assert card["texts"] and card["texts"][0] == best["strategy"][:399] + ("…" if len(best["strategy"]) > 400 else "")
    assert card["unit"] == "generation" and card["total"] == 2


def check_layer(out: Path, final: dict[str, Any]) -> None:
    done = summaries(out)
    for card in final["runs"]:
        lines = [line for _, line in sorted(store_rounds(out, card["run"]).items())]
        choices = chart(card, "move:choose")
        assert (choices["yMin"], choices["yMax"]) == (0, 20)  # the choice's own bounds (Number(0, tokens))
        expected = []
        for line in lines:
            chosen = [float(move[3]) for group in line["groups"] for move in group["moves"] if not move[4]]
            expected.append((line["round"], sum(chosen) / len(chosen)))
        same(choices["series"][0]["values"], expected)
        same(series(chart(card, "payoff"), "mean payoff"), [(line["round"], line["mean_payoff"]) for line in lines])
        score = series(chart(card, "score"), "score")
        assert score[-1] == [lines[-1]["round"], pytest.approx(done[card["run"]]["score"])]
        assert card["stats"]["score"]["value"] == pytest.approx(done[card["run"]]["score"])


FAMILIES = [
    # (name, scenario file, changes, runs, seconds per call, the chart a click is tested on)
    ("naming", "naming_game.py", {"agents": 10, "max_rounds": 24, "committed": 3}, 2, 0.04, "shares"),
    ("networks", "network_topology.py", {"agents": 10, "max_rounds": 24, "topologies": ["ring", "small-world"]}, 2, 0.015,
     "success"),
    ("sign", "sign_schema.py", {"agents": 6, "lexicon_size": 6, "max_rounds": 8, "condition": "schema", "memory_length": 5,
                                "alpha": 0.75}, 2, 0.06, "agreement"),
    ("commons", "commons_fishing.py", {"months": 3}, 1, 0.06, "stock"),
    ("evolution", "donor_game.py", {"generations": 2, "condition": "norms"}, 1, 0.1, "resources"),
    ("layer", "gamabench/public_goods.py", {"agents": 4, "max_rounds": 8}, 2, 0.1, "move:choose"),
]


@pytest.mark.parametrize(("name", "scenario", "changes", "runs", "delay", "clicked"), FAMILIES, ids=[f[0] for f in FAMILIES])
def test_each_family_shows_what_its_paper_plots(tmp_path: Path, name: str, scenario: str, changes: dict[str, Any], runs: int,
                                                delay: float, clicked: str) -> None:
    browser()
    out = tmp_path / name
    watched = asyncio.run(follow(lambda: start_slow_run(scenario, out, changes, runs=runs, delay=delay), out,
                                 tmp_path / "profile", name, drill=(clicked, 1)))
    assert "does not exist yet" in watched["waiting"]  # watch began before the run made its directory

    pictures = updated_while_recording(watched["during"])
    assert len(pictures) >= 3, f"the page did not update while the run recorded: {pictures}"
    final = watched["final"]
    assert [card["status"] for card in final["runs"]] == ["done"] * runs and final["recording"] == "false"
    for card in final["runs"]:
        assert card["asOf"] and "as of" in card["age"] and " ago)" in card["age"]  # every card says how old it is
    if runs > 1:
        assert final["across"], "no chart across the runs"
    {"naming": lambda: check_naming(out, final), "networks": lambda: check_networks(out, final),
     "sign": lambda: check_sign(out, final, watched["during"]), "commons": lambda: check_commons(out, final, watched["during"]),
     "evolution": lambda: check_evolution(out, final), "layer": lambda: check_layer(out, final)}[name]()
    check_drill(out, watched["drill"], round_base=1 if name == "layer" else 0)
    check_unchanged(watched)


def test_a_killed_run_is_shown_as_not_running(tmp_path: Path) -> None:
    """SIGKILL mid-run: the page says "not running" with the run's last record and the resume
    command; its elapsed time and calls per second stop changing; the bar says it did not finish."""
    browser()
    out = tmp_path / "killed"
    run = start_slow_run("naming_game.py", out, {"agents": 10, "max_rounds": 400, "stop_at": "none"}, runs=1, delay=0.02)
    try:
        for _ in range(600):
            if (out / "agentsim.db").exists():
                try:
                    with sqlite3.connect(f"{(out / 'agentsim.db').as_uri()}?mode=ro", uri=True) as connection:
                        if connection.execute("SELECT COUNT(*) FROM rounds").fetchone()[0] >= 3:
                            break
                except sqlite3.Error:  # its tables not made yet
                    pass
            time.sleep(0.05)
    finally:
        run.send_signal(signal.SIGKILL)
        run.wait(10)
        if run.stderr is not None:
            run.stderr.close()

    async def look() -> tuple[dict[str, Any], dict[str, Any]]:
        watch, url = start_watch(out)
        try:
            async with Page(tmp_path / "profile") as page:
                await page.open(url + "?every=250")
                await wait_for(page, "document.querySelector('article.run[data-status=\"not running\"]') !== null")
                first = await page.evaluate(READ)
                await asyncio.sleep(2.5)
                later = await page.evaluate(READ)
                await page.screenshot(shots() / "watch-killed.png")
                return first, later
        finally:
            stop(watch)

    first, later = asyncio.run(look())
    (card,) = first["runs"]
    assert card["status"] == "not running" and "not running" in card["text"]
    assert f"python -m agentsim --resume --out {out}" in card["text"] and "last record" in card["text"]
    assert "progress-not-running" in card["bar"] and "not running" in first["section"]
    assert later["runs"][0]["elapsed"] == card["elapsed"] is not None  # frozen at the last record, not growing
    assert first["recording"] == "false" and "not recording" in first["section"]
    assert card["age"].startswith("figures from its last record, as of") and " ago)" in card["age"]


def test_watch_waits_for_a_directory_that_does_not_exist_yet(tmp_path: Path) -> None:
    """`watch DIR` before the run: the page says it waits, then follows the run that makes DIR;
    a game whose class a scenario file defines is found from the file the run recorded."""
    browser()
    out = tmp_path / "later" / "public_goods"
    watch, url = start_watch(out)

    async def look() -> tuple[str, dict[str, Any]]:
        async with Page(tmp_path / "profile") as page:
            await page.open(url + "?every=250")
            waiting = await wait_for(page, "document.body.dataset.polls >= 1 && document.getElementById('experiments').innerText")
            run = start_slow_run("public_goods.py", out, {"agents": 4, "group_size": 4, "max_rounds": 4}, runs=1, delay=0.02)
            assert run.wait(120) == 0, run.stderr.read() if run.stderr else ""
            if run.stderr is not None:
                run.stderr.close()
            await wait_for(page, "document.querySelector('article.run[data-status=\"done\"] .chart') !== null")
            return waiting, await page.evaluate(READ)

    try:
        waiting, shown = asyncio.run(look())
    finally:
        stop(watch)
    assert "does not exist yet" in waiting and "waits" in waiting
    (card,) = shown["runs"]
    assert card["status"] == "done" and chart(card, "move:choose")["yMax"] == 10
    assert "scenario class loaded from the file the runs recorded" in shown["section"]


def test_watch_follows_a_naming_game_on_a_ring(tmp_path: Path, standin_server: Any) -> None:
    browser()
    server: ServerThread = standin_server(capacity=2, service_time_s=0.04)
    out = tmp_path / "naming"
    watched = asyncio.run(follow(lambda: start_run("naming_game.py", f"openai:stand-in@{server.url}/v1", out, "agents=10",
                                                   "max_rounds=40", "topology=ring", "topology_degree=2", "pairing=network"),
                                 out, tmp_path / "profile", "naming-ring", drill=("success", 2)))

    pictures = updated_while_recording(watched["during"])
    assert len(pictures) >= 3, f"the page did not update while the run recorded: {pictures}"

    summary = json.loads((out / "summary.json").read_text())["runs"][0]
    (final,) = watched["final"]["runs"]
    assert final["status"] == "done" and watched["final"]["recording"] == "false"
    assert final["round"] == summary["rounds"] and final["calls"] == summary["calls"]
    assert final["success"] == pytest.approx(summary["final_success_rate"])
    assert len(series(chart(final, "success"), "success")) == summary["rounds"]  # the whole run, not its last rounds
    lines = dict(final["lines"])
    assert lines["agreement"].startswith(f"{summary['final_agreement']:.0%}")
    shares = dict(final["shares"])
    assert shares[summary["leading_name"]] == max(shares.values()) > 0
    assert final["coloured"] == 10  # every agent of the ring coloured by its latest choice
    assert "ring" in final["heading"]  # the topology on the card
    check_drill(out, watched["drill"])
    check_unchanged(watched)


def test_watch_follows_a_prisoners_dilemma(tmp_path: Path, standin_server: Any) -> None:
    browser()
    server: ServerThread = standin_server(capacity=2, service_time_s=0.25)
    server.server.model = StandInModel([DilemmaByText()])  # the server answers the dilemma's prompts
    out = tmp_path / "dilemma"
    watched = asyncio.run(follow(lambda: start_run("prisoners_dilemma.py", f"openai:stand-in@{server.url}/v1", out, "agents=6",
                                                   "max_rounds=12"), out, tmp_path / "profile", "dilemma"))

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
