"""`python -m agentsim` and the `agentsim` command: SIGINT and SIGTERM are taken before anything
else is imported, so that a signal at any moment ends the command with its one line and exit
130 / 143 (agentsim/interrupts.py)."""

import sys

from . import interrupts


def command() -> int:
    """The command line (agentsim/cli.py), its signals taken first."""
    try:
        interrupts.install()
        from .cli import main  # lazy: after the signals are taken (the command's imports take a while)
    except KeyboardInterrupt:  # a signal while the command's modules import: nothing has started
        print(f"agentsim: interrupted by {interrupts.by()}; it stopped before any run started; no run was recorded "
              f"or changed", file=sys.stderr)
        return interrupts.exit_code()
    try:
        code = main()
    except KeyboardInterrupt:  # between the command's last line and here
        code = interrupts.exit_code()
        print(f"agentsim: interrupted by {interrupts.by()} as the command ended, after its last line", file=sys.stderr)
    return code


def entry() -> None:
    """The `agentsim` console script: the command, then `interrupts.finish`."""
    interrupts.finish(command())


if __name__ == "__main__":
    entry()
