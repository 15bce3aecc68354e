"""The response cache: a wrapper that answers a request it has seen from one SQLite database
that outlives runs and output directories.

The key is everything that determines an answer: provider, endpoint, model, messages, every
sampling parameter, seed, grammar, the valid options (they decide the option
probabilities), the replicate index, and a format version bumped whenever what is stored or
how the key is built changes. The prompts' texts are hashed as they are, after a JSON head that
gives every other part and each message's role and length: encoding a whole prompt as JSON cost
more than the rest of the key. Re-running an experiment with the same seeds into a new output
directory therefore makes no call at all; with `replay` a miss is an error (exact
reproduction, or nothing). The default database lives in the user's cache directory
(platformdirs; AGENTSIM_CACHE overrides it), so every experiment of a user shares it.

The file is bounded (`max_bytes`, default 2 GiB; `--cache-max-mb`): when a process closes it
past the bound, the answers least recently stored or served are deleted until it is 90% full,
and SQLite reuses their pages, so the file stops growing. An answer this process stored or
served is never evicted by it, so the runs it just served rerun from the cache exactly as
before; an evicted answer is only a miss (the backend is asked again, and the experiment's
own store keeps every answer a run recorded). The column `created` holds when an answer was
last stored or served; those stamped since this process opened the file are the ones it used,
so it keeps no set of them in memory (RSS stays flat over a long run: benchmarks/memory.py).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import platformdirs

from ..errors import ReplayMissError, UserError
from .base import Completion, LanguageModel, Request

FORMAT_VERSION = 3  # 2: message texts hashed raw after the head; 3: option probabilities exact or none
_COLUMNS = {"key", "backend", "value", "created"}  # the responses table: a file with other tables is not ours
# Encoders made once: `json.dumps` with any argument builds a new encoder per call, and a key
# and a stored answer are encoded for every call. The bytes are what `json.dumps` gives.
_KEY_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_VALUE_JSON = json.JSONEncoder(separators=(",", ":")).encode
DEFAULT_MAX_BYTES = 2 * 1024**3


def default_cache_path() -> Path:
    override = os.environ.get("AGENTSIM_CACHE")
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("agentsim")) / "responses.db"


class ResponseStore:
    """The cache database: key -> stored completion. One connection per process and path.

    New answers are written in batches (every `batch` answers, at most `flush_seconds` apart,
    and on close): a transaction per answer cost more CPU than the rest of the stack. An
    answer not yet written is still served from memory; one lost to a crash is only a cache
    miss, since the experiment's store has recorded it."""

    def __init__(self, path: Path, *, batch: int = 256, flush_seconds: float = 1.0,
                 max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = path
        self.batch = batch
        self.flush_seconds = flush_seconds
        self.max_bytes = max_bytes
        self.pending: dict[str, tuple[str, str, str, float]] = {}
        self.served: set[str] = set()  # answers served from the file since the last flush: their time is renewed
        # Every answer this process stores or serves is stamped (`created`) at or after this
        # moment, so the file itself says which ones it used: none of those is evicted by it,
        # and no set of keys grows in memory with the calls.
        self.opened = time.time()
        self.flushed = time.monotonic()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise UserError(f"cannot make the response cache's directory {path.parent} ({error.strerror}); give a "
                            f"writable --cache PATH, or --no-cache") from None
        _refuse_truncated(path)
        try:
            self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:  # a name too long, a directory in its place, no permission
            raise UserError(f"cannot open the response cache {path} ({error}); give another --cache PATH (a shorter "
                            f"one, in a writable directory), or --no-cache") from None
        try:
            tables = {name: {column[1] for column in self.connection.execute(f"PRAGMA table_info({name})")}
                      for (name,) in self.connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if tables and tables.get("responses") != _COLUMNS:  # never write into someone else's database
                self.connection.close()
                raise UserError(f"the response cache {path} is an SQLite database agentsim did not create; agentsim "
                                f"never writes into it: give another --cache PATH, or --no-cache")
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute("PRAGMA busy_timeout=10000")  # several experiments may share the file
            self.connection.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, backend TEXT, value TEXT NOT NULL, created REAL)")
            self.connection.execute("CREATE INDEX IF NOT EXISTS responses_by_use ON responses (created)")
        except sqlite3.DatabaseError as error:
            self.connection.close()
            raise self.damaged(error) from None

    def damaged(self, error: sqlite3.DatabaseError) -> UserError:
        """What to do about a cache file that turns out damaged (at open, or on a damaged page
        mid-run): it only holds answers, so it can be deleted."""
        return UserError(f"the response cache {self.path} is damaged or not a database ({error}); delete it (it only "
                         f"holds answers already recorded), give another --cache PATH, or --no-cache")

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value (JSON, as `put` was given it), or None."""
        waiting = self.pending.get(key)
        if waiting is not None:
            return json.loads(waiting[2])
        try:
            row = self.connection.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        except sqlite3.DatabaseError as error:
            if isinstance(error, sqlite3.OperationalError) and "locked" in str(error):
                raise
            raise self.damaged(error) from None
        if row is None:
            return None
        self.served.add(key)
        self._flush_when_due()  # a rerun served wholly from the file renews in batches, not at close
        return json.loads(row[0])

    def put(self, key: str, backend: str, value: dict[str, object]) -> None:
        self.pending[key] = (key, backend, _VALUE_JSON(value), time.time())
        self._flush_when_due()

    def _flush_when_due(self) -> None:
        if (len(self.pending) + len(self.served) >= self.batch
                or time.monotonic() - self.flushed >= self.flush_seconds):
            self.flush()

    def flush(self) -> None:
        if self.pending or self.served:
            now = time.time()
            try:
                with self.connection:
                    self.connection.execute("BEGIN")
                    self.connection.executemany("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                                                list(self.pending.values()))
                    self.connection.executemany("UPDATE responses SET created = ? WHERE key = ?",
                                                [(now, key) for key in self.served])
            except sqlite3.OperationalError as error:  # full, read-only, locked past the busy timeout
                raise UserError(f"cannot write the response cache {self.path} ({error}); free space or give another "
                                f"--cache PATH, or --no-cache") from None
            except sqlite3.DatabaseError as error:
                raise self.damaged(error) from None
            self.pending.clear()
            self.served.clear()
        self.flushed = time.monotonic()

    def forget(self, key: str) -> None:
        self.pending.pop(key, None)
        self.served.discard(key)
        try:
            with self.connection:
                self.connection.execute("BEGIN")
                self.connection.execute("DELETE FROM responses WHERE key = ?", (key,))
        except sqlite3.OperationalError as error:  # full, read-only, locked past the busy timeout
            raise UserError(f"cannot write the response cache {self.path} ({error}); free space or give another "
                            f"--cache PATH, or --no-cache") from None
        except sqlite3.DatabaseError as error:
            raise self.damaged(error) from None

    def size(self) -> int:
        """Bytes the answers occupy (pages in use, not the free pages SQLite will reuse)."""
        page_size, pages, free = (self.connection.execute(f"PRAGMA {name}").fetchone()[0]
                                  for name in ("page_size", "page_count", "freelist_count"))
        return int(page_size * (pages - free))

    def evict(self) -> int:
        """Past `max_bytes`, delete the answers least recently stored or served, but none this
        process used, until the file is 90% full; returns how many went."""
        self.flush()
        evicted = 0
        if self.size() <= self.max_bytes:
            return 0
        target = int(self.max_bytes * 0.9)
        try:
            while (size := self.size()) > target:
                rows = self.connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
                if not rows:
                    break
                needed = max(1, math.ceil((size - target) / (size / rows)))  # at the mean size of an answer
                doomed = [key for (key,) in self.connection.execute(
                    "SELECT key FROM responses WHERE created IS NULL OR created < ? ORDER BY created LIMIT ?",
                    (self.opened, needed))]
                if not doomed:
                    break  # what is left was used by this process's own runs: kept, past the bound
                with self.connection:
                    self.connection.execute("BEGIN")
                    self.connection.executemany("DELETE FROM responses WHERE key = ?", [(key,) for key in doomed])
                evicted += len(doomed)
                if len(doomed) < needed:
                    break
        except sqlite3.OperationalError as error:
            raise UserError(f"cannot trim the response cache {self.path} ({error}); give another --cache PATH, "
                            f"or --no-cache") from None
        return evicted

    def count(self) -> int:
        self.flush()
        return int(self.connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        self.evict()
        self.connection.close()


def _refuse_truncated(path: Path) -> None:
    """Refuse a cache file shorter than its own header says (cut off by a full disk or a
    partial copy): SQLite would read it, and fail at the first missing page, mid-run."""
    try:
        with path.open("rb") as file:
            header = file.read(100)
            size = os.fstat(file.fileno()).st_size
    except FileNotFoundError:
        return
    except OSError as error:
        raise UserError(f"cannot read the response cache {path} ({error.strerror}); give another --cache PATH, "
                        f"or --no-cache") from None
    if not size:
        return
    page = int.from_bytes(header[16:18], "big") if len(header) >= 100 else 0
    page = 65536 if page == 1 else page
    valid = len(header) >= 100 and header[:16] == b"SQLite format 3\x00" and page >= 512 and page & (page - 1) == 0
    if valid and header[24:28] == header[92:96]:  # the header's page count is current
        pages = int.from_bytes(header[28:32], "big")
        valid = size % page == 0 and size >= pages * page
    if not valid:
        raise UserError(f"the response cache {path} is truncated or not a database; delete it (it only holds answers "
                        f"already recorded), give another --cache PATH, or --no-cache")


def cache_key(provider: str, endpoint: str, model: str, request: Request) -> str:
    sampling = request.sampling
    grammar = request.grammar
    messages = request.messages
    head = [
        FORMAT_VERSION, provider, endpoint, model,
        [[message.role, len(message.content)] for message in messages],
        [sampling.temperature, sampling.top_k, sampling.top_p, sampling.max_tokens, sampling.repetition_penalty,
         list(sampling.stop)],
        request.seed, list(request.options), request.replicate,
        None if grammar is None else [grammar.kind, grammar.value],
    ]
    digest = hashlib.sha256(_KEY_JSON(head).encode())
    for message in messages:  # their lengths are in the head, so the concatenation is unambiguous
        digest.update(message.content.encode())
    return digest.hexdigest()


_STORED = ("text", "prompt_tokens", "completion_tokens", "cached_prompt_tokens", "cache_write_tokens", "model",
           "option_probabilities", "unscored", "raw")


class CachedModel:
    """A `LanguageModel` wrapper: answer from the cache, else ask `inner` and remember."""

    def __init__(self, inner: LanguageModel, store: ResponseStore, *, provider: str, endpoint: str, model: str,
                 replay: bool = False) -> None:
        self.inner = inner
        self.name = inner.name
        self.immediate = inner.immediate
        self.store = store
        self.identity = (provider, endpoint, model)
        self.replay = replay
        self.hits = 0
        self.misses = 0

    async def complete(self, request: Request) -> Completion:
        key = cache_key(*self.identity, request)
        stored = self.store.get(key)
        if stored is not None:
            fields: dict[str, Any] = {name: stored[name] for name in _STORED if name in stored}
            if "batch_cost_usd" in stored:  # a batch's answer (llm/batches.py): its first use is the call it paid for
                self.store.put(key, self.name, {name: stored[name] for name in _STORED if name in stored})
                return Completion(**fields, batched=True, cost_usd=float(stored["batch_cost_usd"]))
            self.hits += 1
            return Completion(**fields, cached=True)
        if self.replay:
            raise ReplayMissError(f"--replay: the cache {self.store.path} holds no answer for a request to {self.name}; "
                                  f"run without --replay to ask the backend")
        self.misses += 1
        completion = await self.inner.complete(request)
        value = {name: getattr(completion, name) for name in _STORED}
        if value["option_probabilities"] is not None:
            value["option_probabilities"] = dict(value["option_probabilities"])
        self.store.put(key, self.name, value)
        return completion

    def forget(self, request: Request) -> None:
        """Take the answer to `request` out of the cache (a reply the game could not read,
        when its run stops for fallbacks): the next ask goes to the backend."""
        self.store.forget(cache_key(*self.identity, request))

    async def aclose(self) -> None:
        self.store.evict()
        await self.inner.aclose()
