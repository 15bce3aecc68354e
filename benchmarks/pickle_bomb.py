"""What a pickle bomb costs `import ainorms` before it is refused: the command's wall time and
its peak memory (the child's maxrss), for a bomb that builds a deep stack (N MiB of EMPTY_LIST,
each pushed and held: before issue 44, 8 MiB took 6 s and 750 MB, 32 MiB 100 s and 2.6 GB) and
one that stays flat (EMPTY_LIST, POP: work without memory), each in a deflated zip of a few
dozen KB, as an attacker would ship it.

    python benchmarks/pickle_bomb.py [--sizes 8,32]

Prints a table; asserts nothing timed (the refusal itself is tests/test_results_stay_put.py)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEMBER = "toy_converged_baseline_Q_M_-50_100_2mem_complete_4ps_0.5tmp.pkl"


def bomb(path: Path, megabytes: int, kind: str) -> Path:
    body = b"]" * (megabytes << 20) if kind == "stack" else b"]0" * ((megabytes << 20) // 2)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MEMBER, b"\x80\x04" + body + b".")
    return path


def measure(source: Path, out: Path) -> tuple[int, float, float, str]:
    """Exit code, seconds, peak MB and last line of `python -m agentsim import ainorms SOURCE`."""
    environment = os.environ | {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    began = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "agentsim", "import", "ainorms", str(source), "--out", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=environment)
    assert process.stderr is not None
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    process.stderr.close()
    line = (stderr.strip().splitlines() or [""])[-1]
    return process.returncode, time.monotonic() - began, usage.ru_maxrss / 1024, line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="8,32", help="bomb sizes in MiB (default 8,32)")
    options = parser.parse_args(argv)
    print("| bomb | zip | exit | seconds | peak MB | refused because |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        for megabytes in (int(size) for size in options.sizes.split(",")):
            for kind in ("stack", "flat"):
                source = bomb(Path(directory) / f"{kind}{megabytes}.zip", megabytes, kind)
                code, seconds, peak, line = measure(source, Path(directory) / f"out-{kind}{megabytes}")
                reason = line.split("the pickle ", 1)[-1].split(", and only", 1)[0]
                print(f"| {megabytes} MiB {kind} | {source.stat().st_size // 1024} KB | {code} | {seconds:.2f} | {peak:.0f} "
                      f"| {reason} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
