"""What a Ray worker streams to the driver: the run's sink calls as typed records, which the
driver replays onto the experiment's own `StoreSink` (so a run recorded through Ray is written
by the very code that writes one in process), and the few messages about the worker itself."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..progress import RunView
from ..replicates import RunSink
from ..store import Recorder
from .portable import PortableError


@dataclass(frozen=True)
class Begun:
    """`RunSink.begin`: a new run, its row and its agents."""

    run: int
    replicate: int
    seed: int
    backend: str
    agents: list[tuple[int, str, str]]

    def replay(self, sink: RunSink) -> RunView | None:
        sink.begin(self.run, replicate=self.replicate, seed=self.seed, backend=self.backend,
                   agents=[(int(index), str(kind), str(label)) for index, kind, label in self.agents])
        return None


@dataclass(frozen=True)
class Resumed:
    """`RunSink.resumed`: a run continued from a checkpoint."""

    run: int

    def replay(self, sink: RunSink) -> RunView | None:
        sink.resumed(self.run)
        return None


@dataclass(frozen=True)
class Committed:
    """`RunSink.commit`: rows together with the checkpoint they lead to, and the run's picture then."""

    recorder: Recorder
    checkpoint: bytes
    t: int
    view: RunView | None

    def replay(self, sink: RunSink) -> RunView | None:
        sink.commit(self.recorder, self.checkpoint, self.t)
        return self.view


@dataclass(frozen=True)
class Finished:
    """`RunSink.finish`: the run's status, stop reason and summary, and its last picture."""

    run: int
    status: str
    stop_reason: str | None
    summary: dict[str, Any]
    view: RunView | None

    def replay(self, sink: RunSink) -> RunView | None:
        sink.finish(self.run, self.status, stop_reason=self.stop_reason, summary=self.summary)
        if self.view is None:
            return None
        return dataclasses.replace(self.view, status=self.status, stop_reason=self.stop_reason)


@dataclass(frozen=True)
class Placed:
    """Where the run goes on (host and worker pid), for the record of the sweep."""

    host: str
    pid: int


@dataclass(frozen=True)
class Warned:
    """A backend's warning."""

    text: str


@dataclass(frozen=True)
class Raised:
    """What stopped the run, if anything."""

    error: PortableError


SinkCall = Begun | Resumed | Committed | Finished
Message = SinkCall | Placed | Warned | Raised
