"""The response cache is bounded: past its size, the answers least recently stored or served
go, never one the closing process used, and a run it served reruns from it with no call."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentsim.llm.base import Completion, Message, Request, Sampling
from agentsim.llm.cache import CachedModel, ResponseStore

FILLER = "x" * 4000  # an answer of about 4 kB: a few hundred fill a 1 MiB bound


class Counting:
    """A backend that answers every request and counts the calls."""

    name = "counting"
    immediate = False

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: Request) -> Completion:
        self.calls += 1
        return Completion(text=FILLER + request.messages[-1].content, prompt_tokens=3, completion_tokens=1000)

    async def aclose(self) -> None:
        return None


def request(number: int) -> Request:
    return Request(messages=(Message("user", f"question {number}"),), sampling=Sampling(max_tokens=8), seed=number)


def serve(path: Path, numbers: range, *, max_bytes: int) -> tuple[int, int]:
    """One process's worth of requests through the cache; returns (backend calls, evicted)."""
    backend = Counting()
    store = ResponseStore(path, max_bytes=max_bytes)
    model = CachedModel(backend, store, provider="p", endpoint="e", model="m")

    async def ask() -> None:
        for number in numbers:
            await model.complete(request(number))
        await model.aclose()

    asyncio.run(ask())
    count = store.count()
    store.connection.close()
    return backend.calls, count


def test_the_file_stays_within_its_bound_and_keeps_what_the_last_run_used(tmp_path: Path) -> None:
    path, bound = tmp_path / "cache.db", 2**20
    calls, kept = serve(path, range(600), max_bytes=bound)  # about 2.4 MB of answers in one run
    assert calls == 600 and kept == 600, "a run's own answers are never evicted by it, even past the bound"
    calls, kept = serve(path, range(600, 700), max_bytes=bound)
    assert calls == 100
    assert kept < 300, "the older run's answers went once another process closed the file past its bound"
    store = ResponseStore(path, max_bytes=bound)
    assert store.size() <= bound
    store.connection.close()
    calls, _ = serve(path, range(600, 700), max_bytes=bound)
    assert calls == 0, "the run the cache served last reruns from it without a call"


def test_an_answer_served_again_is_kept_before_one_never_asked_since(tmp_path: Path) -> None:
    path, bound = tmp_path / "cache.db", 3 * 2**19  # room for about 320 of the 420 answers after the trim
    serve(path, range(200), max_bytes=2**30)  # two generations of answers, no eviction yet
    serve(path, range(200, 400), max_bytes=2**30)
    assert serve(path, range(200), max_bytes=2**30)[0] == 0  # the first generation served again: renewed
    calls, _ = serve(path, range(400, 420), max_bytes=bound)
    assert calls == 20
    assert serve(path, range(200), max_bytes=2**30)[0] == 0, "recently served answers survive the trim"
    assert serve(path, range(200, 400), max_bytes=2**30)[0] > 0, "the least recently used went first"
