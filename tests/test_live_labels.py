"""Issue 37 (12): a game's `LiveFigures` line labelled like a field of the log line (`round`,
`calls`, `fallbacks`, `event`) or with spaces (`mean payoff`) neither crashes the log view (it
was `TypeError: got multiple values for keyword argument`, and the finished runs were recorded
`failed`) nor breaks its key=value lines; and a view that fails for any reason fails no run."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from test_live import view

from agentsim.figures import LiveFigures
from agentsim.games.naming import NamingGame
from agentsim.live import LogView, configure_logging
from agentsim.progress import Progress
from agentsim.runner import Experiment, ExperimentConfig
from agentsim.store import Store

LABELS = (("round", "3 of 12"), ("calls", "many"), ("fallbacks", "none"), ("event", "a flood"),
          ("mean payoff", "1.25 (generation 2)"), ("Agreed limit!", "4 tons"), ("", "unlabelled"))
PAIR = re.compile(r"([a-z_][a-z0-9_]*)=('(?:[^'\\]|\\.)*'|\{[^}]*\}|\S+)")


def parsed(line: str) -> dict[str, str]:
    """A key=value line's fields; every character of the line is in one of them."""
    pairs = PAIR.findall(line)
    assert " ".join(f"{key}={value}" for key, value in pairs) == line, line
    return dict(pairs)


def test_game_lines_named_like_log_fields_keep_the_log_lines_whole(capsys: Any) -> None:
    configure_logging()
    log = LogView(every_seconds=0)
    log.update([view(status="done", stop_reason="max_rounds", metrics=LiveFigures(lines=LABELS))])
    (line,) = capsys.readouterr().err.strip().splitlines()
    fields = parsed(line)
    assert fields["event"] == "'run_ended'" and fields["round"] == "12" and fields["calls"] == "288"
    assert fields["game_round"] == "'3 of 12'" and fields["game_calls"] == "'many'"
    assert fields["game_fallbacks"] == "'none'" and fields["game_event"] == "'a flood'"
    assert fields["mean_payoff"] == "'1.25 (generation 2)'" and fields["agreed_limit"] == "'4 tons'"
    assert fields["line"] == "'unlabelled'"


class Broken:
    """A view that cannot draw anything."""

    def start(self, experiment: dict[str, Any]) -> None: ...

    def update(self, runs: list[Any], *, final: bool = False) -> None:
        raise TypeError("cannot draw")

    def stop(self) -> None: ...


def test_a_view_that_fails_fails_no_run(tmp_path: Path, capsys: Any) -> None:
    experiment = Experiment(ExperimentConfig(scenario=NamingGame().with_overrides({"max_rounds": "3"}),
                                             out=tmp_path / "out"), Broken())
    experiment.open()
    summaries = asyncio.run(experiment.run())
    assert [summary["status"] for summary in summaries] == ["done"]
    store = Store(tmp_path / "out")
    assert [row["status"] for row in store.runs()] == ["done"]
    store.close()
    assert capsys.readouterr().err.count("the view could not show the runs") == 1
    assert Progress(Broken()).view_failed is False
