"""`python -m agentsim` and the `agentsim` command: SIGINT and SIGTERM are taken before anything
else is imported, so that a signal at any moment ends the command with its one line and exit
130 / 143 (agentsim/interrupts.py)."""

import sys

from . import interrupts


def command() -> int:
    """The command line (agentsim/cli.py), its signals taken first."""
    try:
        interrupts.install()
        from .cli import main
    except KeyboardInterrupt:  # a signal while the command's modules import: nothing has started
        print(f"agentsim: interrupted by {interrupts.by()}; it stopped before any run started; no run was recorded "
              f"or changed", file=sys.stderr)
        return interrupts.exit_code()
    code = main()
    interrupts.hold()  # the last line is out: the exit code it gives stands
    return code


if __name__ == "__main__":
    raise SystemExit(command())
