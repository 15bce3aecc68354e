"""SIGINT and SIGTERM for the command line, from its first line to its last.

A signal can come at any moment: while Python imports agentsim, while the scenario file loads,
during the start-up probe, while the runs play, while the last line is printed. `install` (the
first thing `python -m agentsim` does) makes every one of them end the command the same way:
exit 130 (SIGINT, Ctrl-C) or 143 (SIGTERM) with one line, never a traceback, never a process
killed without a word, never taken for a fault of the scenario file, never lost.

Two phases. Before the runs start, a signal raises `Interrupt` (a KeyboardInterrupt) where the
program is, and the command line catches it as its last resort; the store is SQLite, whose
transactions an exception rolls back, so nothing is half-written. While the runs play,
`cancelling(task)` turns the first signal into the cancellation of the experiment's task, which
records every run as interrupted and writes summary.json; a second signal is not gentle (it
raises, as before the runs). The handlers are Python's own (`signal.signal`), not the event
loop's, so no moment falls between two sets of handlers.

The Python API installs nothing here: a notebook or a script keeps its own handlers.
"""

from __future__ import annotations

import signal
import sys

TYPE_CHECKING = False  # (typing, asyncio and contextlib cost imports: this module is the first one imported)
if TYPE_CHECKING:
    import asyncio
    from types import FrameType, TracebackType
    from typing import NoReturn

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}

received: list[int] = []  # the signals this process took, in order
_recording: list[bool] = []  # set once the command's last line is out (`finish`)
_target: list[tuple[asyncio.AbstractEventLoop, asyncio.Task[None]]] = []  # what the first signal cancels


class Interrupt(KeyboardInterrupt):
    """A signal the command received (SIGINT or SIGTERM), raised where the program was: not a
    KeyboardInterrupt that some code (a scenario file) raised itself."""

    def __init__(self, number: int) -> None:
        super().__init__(signal.Signals(number).name)
        self.number = number


def install() -> None:
    """SIGINT and SIGTERM raise `Interrupt` from now on (a signal the process was started with
    ignored, `nohup`'s or a background job's, stays ignored); a signal held back until now (a
    supervisor that blocked them while it started the process) is taken at once."""
    for number in SIGNALS:
        if signal.getsignal(number) is not signal.SIG_IGN:
            signal.signal(number, _on_signal)
    sys.unraisablehook = _unraisable
    signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """A signal whose `Interrupt` was raised where Python cannot pass it on (a weakref's
    callback, a `__del__`, a garbage collection) is not printed as "Exception ignored in ...":
    it is in `received`, and the command answers it in its one line when it next looks."""
    if isinstance(unraisable.exc_value, Interrupt):
        return
    sys.__unraisablehook__(unraisable)


def by() -> str:
    """Who stopped the command, in the words of its line: "Ctrl-C" or "SIGTERM"."""
    return "SIGTERM" if received and received[-1] == signal.SIGTERM else "Ctrl-C"


def exit_code() -> int:
    """130 after SIGINT (or a KeyboardInterrupt of unknown origin), 143 after SIGTERM."""
    return EXIT_CODES.get(signal.Signals(received[-1]), 130) if received else 130


class cancelling:
    """While inside, the first signal cancels `task` (on its loop, which runs in this thread)
    instead of raising: the runs stop as an interrupt stops them, and record it."""

    def __init__(self, task: asyncio.Task[None]) -> None:
        self.task = task

    def __enter__(self) -> None:
        import asyncio

        _target.append((asyncio.get_running_loop(), self.task))

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        _target.clear()


def _on_signal(number: int, frame: FrameType | None) -> None:
    received.append(number)
    if _recording:  # the command has ended: `finish` says so
        return
    if _target and len(received) == 1:
        loop, task = _target[0]
        task.cancel()
        loop.call_soon_threadsafe(lambda: None)  # wakes a loop that sleeps in select()
        return
    raise Interrupt(number)


def finish(code: int) -> NoReturn:
    """End the process with `code` once the command's last line is out, keeping the promise to
    the end: Python's own exit (atexit callbacks: Ray's shutdown) runs here with signals only
    recorded, and a signal taken meanwhile still gives 130 / 143 and one line; then the process
    ends at once, without the interpreter's module teardown, during which a signal would meet
    no handler at all (lost, or a process killed without a word)."""
    import atexit
    import os
    import sys

    _recording[:] = [True]
    before = len(received)
    try:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
    except (OSError, ValueError):  # a reader gone away: the exit code still says how it ended
        pass
    if len(received) > before:
        code = exit_code()
        os.write(2, f"agentsim: interrupted by {by()} as the command ended, after its last line; nothing was left "
                    f"to stop, and what it recorded stands\n".encode())
    os._exit(code)
