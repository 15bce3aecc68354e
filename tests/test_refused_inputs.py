"""Inputs that were accepted, or refused with the wrong words (issue 37, item 14): each ends in
one line that names the fix, exit 2."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import ROOT, cli, cli_in_process
from test_cli import assert_user_error

from agentsim.errors import UserError
from agentsim.llm.cache import ResponseStore

NAMING = str(ROOT / "scenarios" / "naming_game.py")
DILEMMA = str(ROOT / "scenarios" / "prisoners_dilemma.py")
QUICK = ("--set", "agents=6", "--set", "max_rounds=2", "--no-live")


@pytest.mark.parametrize(("arguments", "fix"), [
    (("--backend", "stand-in:"), "stand-in:LABEL"),
    (("--population", "stand-in=4,,", "--set", "agents=4"), "empty entry"),
    (("--population", "stand-in=2,,stand-in:b=2", "--set", "agents=4"), "empty entry"),
    (("--set", "pairing=network"), "topology=ring"),
])
def test_a_malformed_spec_or_setting_is_refused(tmp_path: Path, arguments: tuple[str, ...], fix: str) -> None:
    result = cli_in_process(NAMING, "--out", str(tmp_path / "out"), *QUICK, *arguments)
    assert_user_error(result, fix)
    assert not (tmp_path / "out").exists()


def _truncated_cache(path: Path) -> Path:
    store = ResponseStore(path)
    for index in range(400):
        store.put(f"key{index}", "b", {"text": "x" * 200})
    store.flush()
    store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.connection.close()
    data = path.read_bytes()
    assert len(data) > 8 * 4096
    path.write_bytes(data[:-1000])  # cut mid-page (SQLite notices a cut at a page boundary itself)
    return path


def test_a_truncated_response_cache_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = _truncated_cache(tmp_path / "responses.db")
    with pytest.raises(UserError, match="truncated"):
        ResponseStore(cache)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = cli_in_process(NAMING, "--out", str(tmp_path / "out"), *QUICK, "--backend", "openai:gpt-4o-mini",
                            "--base-url", "http://127.0.0.1:9/v1", "--cache", str(cache))
    assert_user_error(result, "truncated", "--no-cache")


def test_an_intact_response_cache_still_opens(tmp_path: Path) -> None:
    store = ResponseStore(tmp_path / "responses.db")
    store.put("key", "b", {"text": "x"})
    store.close()
    again = ResponseStore(tmp_path / "responses.db")
    assert again.get("key") == {"text": "x"}
    again.close()
    sqlite3.connect(tmp_path / "empty.db").close()
    ResponseStore(tmp_path / "empty.db").close()


def test_resuming_with_another_scenario_file_names_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert cli_in_process(NAMING, "--out", str(out), *QUICK).returncode == 0
    # (a new process: this one has the naming game's classes loaded already)
    assert_user_error(cli(DILEMMA, "--resume", "--out", str(out), "--no-live"),
                      "the scenario file was naming_game there, prisoners_dilemma here")


def test_a_name_too_long_is_not_blamed_on_free_space(tmp_path: Path) -> None:
    long = tmp_path / ("a" * 300)
    for arguments in (("--resume", "--out", str(long)), (NAMING, "--out", str(long / "x"), *QUICK)):
        result = cli_in_process(*arguments, "--no-live")
        assert_user_error(result, "too long", "shorter")
        assert "free space" not in result.stderr
