"""Issue 37 (17): `check-model --timeout` and `--no-cache`; and a local model keyed in the
response cache by its content, not its path (a rerun re-measured nothing, and a file replaced at
the same path got the old file's figures)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from helpers import cli
from servers import standin_server  # noqa: F401  (the fixture)

from agentsim.llm.accounting import Budget
from agentsim.llm.base import Completion, Request
from agentsim.llm.cache import CachedModel
from agentsim.llm.model_files import SAMPLE_BYTES, cache_identity
from agentsim.llm.specs import BackendOptions, parse_spec
from agentsim.llm.stack import layer, wrap


def model_file(path: Path, fill: bytes, size: int = 3 * SAMPLE_BYTES) -> Path:
    path.write_bytes(b"GGUF" + fill * (size // len(fill)))
    return path


def test_a_local_model_is_named_by_its_content(tmp_path: Path) -> None:
    first = model_file(tmp_path / "model.gguf", b"a")
    named = cache_identity("local", str(first))
    copy = shutil.copy(first, tmp_path / "elsewhere.gguf")
    assert cache_identity("local", str(copy)) == named  # the same file elsewhere: the same answers
    model_file(first, b"b")  # replaced at the same path
    assert cache_identity("local", str(first)) != named
    with first.open("r+b") as handle:  # the same size, only its last tensor changed
        handle.seek(3 * SAMPLE_BYTES - 10)
        handle.write(b"different!")
    assert cache_identity("local", str(first)) not in (named, cache_identity("local", str(copy)))
    assert cache_identity("openai", "gpt-4o-mini") == "gpt-4o-mini"
    assert cache_identity("local", str(tmp_path / "missing.gguf")) == str(tmp_path / "missing.gguf")


class Nothing:
    immediate = True
    name = "local"

    async def complete(self, request: Request) -> Completion:
        return Completion(text="")

    async def aclose(self) -> None: ...


def test_the_response_cache_keys_a_local_model_by_its_content(tmp_path: Path) -> None:
    path = model_file(tmp_path / "model.gguf", b"a")
    options = BackendOptions(cache_path=tmp_path / "responses.db")
    stack = wrap(Nothing(), parse_spec(f"local:{path}"), options, Budget())  # type: ignore[arg-type]
    cached = layer(stack, CachedModel)
    assert isinstance(cached, CachedModel)
    assert cached.identity[2] == cache_identity("local", str(path)) != str(path)


def requests_of(server: Any, *arguments: str) -> int:
    before = server.stats.requests
    shown = cli("check-model", "--backend", f"tgi:{server.url}", "--seeds", "10", *arguments, timeout=180)
    assert shown.returncode == 0, shown.stderr
    return int(server.stats.requests - before)


def test_check_model_takes_timeout_and_no_cache(standin_server: Any, tmp_path: Path) -> None:
    server = standin_server(capacity=8)
    measured = requests_of(server, "--timeout", "120")
    assert measured > 0
    assert requests_of(server) < measured / 4  # the cache answers a rerun: nothing re-measured
    assert requests_of(server, "--no-cache") >= measured - 2  # measured afresh (the probe aside)
    refused = cli("check-model", "--backend", f"tgi:{server.url}", "--timeout", "0")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--timeout" in refused.stderr
