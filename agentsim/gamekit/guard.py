"""A bug in a game's own code is the user's to fix, not agentsim's: where a hook the game file
wrote (`outcome`, `choice`, `play_round`, `feedback`, `private`, `standin_choice`, `score`, a
`rules` property) raises, the run stops as a user error (the run recorded as failed, exit code
2), with one line that names the exception and the game file's line it came from, instead of a
traceback through agentsim. An exception whose traceback never passes through the game's file
is agentsim's own (a bug: it is raised as it is, exit code 1), and so is one raised deeper in
agentsim than the layer's verbs the game calls (an ask on its way through the engine).
"""

from __future__ import annotations

import inspect
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from ..errors import AgentsimError, ScenarioFileError


class GameCodeError(ScenarioFileError):
    """The game file's own code raised (a NameError in `outcome`, a KeyError in `score`)."""


def game_files(game: Any) -> set[str]:
    """The files of the game's classes that are not agentsim's (the game file, and any module
    of the user's that a base class of it comes from)."""
    files = set()
    for cls in type(game).__mro__:
        if cls.__module__.split(".")[0] in ("agentsim", "builtins", "typing"):
            continue
        try:
            files.add(str(inspect.getsourcefile(cls) or inspect.getfile(cls)))
        except (TypeError, OSError):
            continue
    return files


PACKAGE = Path(__file__).resolve().parent.parent  # agentsim/
LAYER = Path(__file__).resolve().parent  # agentsim/gamekit/: the verbs a game calls (Round.pay, Number(...))


def game_line(game: Any, tb: TracebackType | None) -> traceback.FrameSummary | None:
    """The innermost frame of `tb` in the game's files, or None where it passes through none,
    or where the error came from deeper in agentsim than the layer's own verbs (an ask that
    went on into the engine, the backends: agentsim's, not the game's)."""
    files = game_files(game)
    frames = traceback.extract_tb(tb)
    mine = [index for index, frame in enumerate(frames) if frame.filename in files]
    if not mine:
        return None
    deeper = [Path(frame.filename).resolve() for frame in frames[mine[-1] + 1:]]
    if any(path.is_relative_to(PACKAGE) and not path.is_relative_to(LAYER) for path in deeper):
        return None
    return frames[mine[-1]]


@contextmanager
def game_code(game: Any, where: str) -> Iterator[None]:
    """Run a hook of `game` (`where`: "in round 3", "in its score hook"): an exception from
    the game file's code becomes a `GameCodeError` naming the file's line."""
    try:
        yield
    except AgentsimError:
        raise  # agentsim's own, deliberate errors (a UserError already names its fix)
    except Exception as error:
        frame = game_line(game, error.__traceback__)
        if frame is None:
            raise  # not the game's code: agentsim's bug, with its traceback
        said = str(error).strip().splitlines()
        code = f": {frame.line}" if frame.line else ""
        raise GameCodeError(
            f"the game's code failed {where}: {type(error).__name__}{': ' + said[0] if said else ''} "
            f"({frame.filename}, line {frame.lineno}, in {frame.name}{code}); fix the game file, then run it "
            f"again (--resume --out DIR continues what was recorded)") from error
