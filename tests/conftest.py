"""Shared fixtures. Warnings are errors (pyproject), so an un-awaited coroutine fails its test;
every test has a timeout (pyproject); nothing here touches the network."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test runs in its own directory, so default output paths never collide."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # The response cache of a test is its own, never the user's.
    monkeypatch.setenv("AGENTSIM_CACHE", str(tmp_path / "responses.db"))


@pytest.fixture
def prices_restored() -> Iterator[None]:
    """Prices registered by a test (`register_price`, AGENTSIM_PRICES) do not outlive it."""
    from agentsim.llm import prices

    saved = dict(prices.USER_PRICES)
    yield
    prices.USER_PRICES.clear()
    prices.USER_PRICES.update(saved)
    prices._MATCHED.clear()


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the machine's CPUs. A fifth of the suite's time is spent
    waiting (a stand-in slowed so that a page sees a run live, a timeout waited out, a
    subprocess starting), and an extra worker runs on it: CI's two cores finish about a
    sixth sooner."""
    return (os.cpu_count() or 1) + 1
