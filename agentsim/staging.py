"""A new results directory written whole or not at all: what an importer (`import gamabench`,
`import ainorms`) writes into.

`staged(out)` refuses an `--out` that already holds anything, then hands the importer a hidden
temporary folder beside it (`.NAME.importing-XXXXXX`, on the same file system) to write into.
When the importer returns, the folder is renamed to `--out` in one step (rename(2) replaces a
missing or empty directory atomically); when anything stops it first (a refusal, an error,
Ctrl-C, SIGTERM), the folder is removed and `--out` is as it was, so that the next import into
it starts afresh. SIGINT and SIGTERM wait while the folder is renamed or removed (milliseconds),
so that what the command then says is true. A process killed with SIGKILL leaves the hidden
folder, never a part of `--out`.

Every path an importer writes is `--out` joined with names it made itself: `path_name` turns a
name read from a file (a model, a condition) into one path component, never `..`, never a
separator, never empty.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import OutputDirError

MAX_NAME = 80  # characters of a path component made from a file's content
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def path_name(text: str, *, default: str = "unknown") -> str:
    """`text` as one safe path component: characters other than letters, digits and `._+-`
    become `_`, a leading dot too (no `..`, no hidden name), at most MAX_NAME characters."""
    name = _UNSAFE.sub("_", text)[:MAX_NAME]
    name = re.sub(r"^\.", "_", name)
    return name or default


def refuse_occupied(out: Path) -> None:
    """An import writes a new results directory: refuse an --out that is a file or holds anything."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise OutputDirError(f"--out {out} is not a directory; give a new directory for the imported runs")
    if out.is_dir() and any(out.iterdir()):
        held = next(out.rglob("agentsim.db"), None)
        what = f"runs ({held.parent})" if held is not None else "files"
        raise OutputDirError(f"--out {out} already holds {what}; an import writes a new results directory whole: "
                             f"import into a new --out DIR")


@contextlib.contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A temporary folder beside `out` to write a new results directory into, moved to `out`
    when the block ends normally and removed when it does not (see the module's docstring). A
    signal that stops it carries `outcome`, what became of `out`, for the command's one line."""
    refuse_occupied(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f".{path_name(out.name, default='out')}.importing-", dir=out.parent))
    untouched = f"nothing was imported: --out {out} is as it was"
    try:
        yield folder
    except BaseException as error:
        _held(lambda: shutil.rmtree(folder, ignore_errors=True), untouched)
        if isinstance(error, KeyboardInterrupt):
            error.outcome = untouched  # type: ignore[attr-defined]
        raise

    def move() -> None:
        try:
            os.replace(folder, out)  # (an empty `out` is replaced; one that filled meanwhile is refused)
        except OSError as error:
            shutil.rmtree(folder, ignore_errors=True)
            raise OutputDirError(f"cannot move the import into --out {out} ({error.strerror}); nothing was imported: "
                                 f"import into a new --out DIR") from None

    _held(move, f"the import had completed: --out {out} holds it whole")


@contextlib.contextmanager
def import_outcome(out: Path) -> Iterator[None]:
    """Around an import command: what a signal that stops it before the move into place left
    (`outcome`, for the command's one line): --out as it was."""
    try:
        yield
    except BaseException as error:
        if not hasattr(error, "outcome"):
            error.outcome = f"nothing was imported: --out {out} is as it was"  # type: ignore[attr-defined]
        raise


def _held(action: Callable[[], None], outcome: str) -> None:
    """`action` with SIGINT and SIGTERM held back; one that came meanwhile is raised after it,
    carrying `outcome` (what the action left)."""
    try:
        with _signals_held():
            action()
    except KeyboardInterrupt as error:
        error.outcome = outcome  # type: ignore[attr-defined]
        raise


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held back for the block (the main thread only: elsewhere a no-op);
    one that came meanwhile is taken as the block ends."""
    try:
        before = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    except (ValueError, OSError):  # not the main thread
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
