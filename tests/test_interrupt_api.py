"""Issue 37 (9): an interrupt while `agentsim.run` plays (Jupyter's Interrupt: a SIGINT whose
KeyboardInterrupt is raised in the kernel's main thread, which waits while the runs play on a
worker thread beside Jupyter's event loop; Ctrl-C in a script) stops the runs as Ctrl-C stops
the command line's: they record `interrupted` at once instead of playing every round, and the
exception names the output directory (`agentsim.open(out)`)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT
from test_resume import recorded_rounds

MAX_ROUNDS = 20_000
CELL = f"""
import asyncio, json, os, signal, sqlite3, sys, threading, time
import agentsim
from agentsim.errors import ExperimentInterrupted

out = sys.argv[1]

def interrupt_once_rounds_are_recorded():
    while True:
        try:
            connection = sqlite3.connect(f"file:{{out}}/agentsim.db?mode=ro", uri=True, timeout=0.1)
            rounds = connection.execute("SELECT COUNT(*) FROM rounds").fetchone()[0]
            connection.close()
            if rounds >= 4:
                break
        except sqlite3.Error:
            pass
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

def cell():
    threading.Thread(target=interrupt_once_rounds_are_recorded, daemon=True).start()
    try:
        agentsim.run({str(ROOT / "scenarios" / "naming_game.py")!r}, runs=2, out=out,
                     overrides={{"stop_at": "none", "max_rounds": {MAX_ROUNDS}}})
    except KeyboardInterrupt as error:
        print(json.dumps({{"kind": type(error).__name__, "message": str(error), "out": getattr(error, "out", None)}}))
    else:
        print(json.dumps({{"kind": "finished"}}))

if sys.argv[2] == "notebook":  # a loop running in the main thread, SIGINT raising KeyboardInterrupt: Jupyter's kernel
    async def kernel():
        cell()
    asyncio.new_event_loop().run_until_complete(kernel())
else:
    cell()
"""


@pytest.mark.parametrize("where", ["notebook", "script"])
def test_an_interrupt_stops_the_runs_and_says_where_they_are(tmp_path: Path, where: str) -> None:
    out = tmp_path / "out"
    ran = subprocess.run([sys.executable, "-c", CELL, str(out), where], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    said = json.loads(ran.stdout.strip().splitlines()[-1])
    assert said["kind"] == "ExperimentInterrupted", said
    assert f"agentsim.open({str(out)!r})" in said["message"] and said["out"] == str(out)
    connection = sqlite3.connect(f"file:{out}/agentsim.db?mode=ro", uri=True)
    runs = connection.execute("SELECT status FROM runs").fetchall()
    played = connection.execute("SELECT run, MAX(round) FROM rounds GROUP BY run").fetchall()
    connection.close()
    assert [status for (status,) in runs] == ["interrupted", "interrupted"]
    assert all(rounds < MAX_ROUNDS / 2 for _, rounds in played), played  # stopped, not played to the end
    assert json.loads((out / "summary.json").read_text())["stopped"]["status"] == "interrupted"


def test_jupyters_interrupt_in_a_real_kernel(tmp_path: Path) -> None:
    """The same in an IPython kernel, interrupted by Jupyter's own client (the Interrupt button's
    message): the cell ends at once with ExperimentInterrupted, and the kernel, still alive,
    opens what was recorded."""
    pytest.importorskip("ipykernel")
    manager = pytest.importorskip("jupyter_client.manager")
    out = tmp_path / "out"
    kernel, client = manager.start_new_kernel(kernel_name="python3", cwd=str(tmp_path))
    try:
        asked = client.execute(f"import agentsim\nagentsim.run({str(ROOT / 'scenarios' / 'naming_game.py')!r}, runs=2, "
                               f"out={str(out)!r}, overrides={{'stop_at': 'none', 'max_rounds': {MAX_ROUNDS}}})")
        deadline = time.monotonic() + 120
        while recorded_rounds(out / "agentsim.db") < 4:
            assert time.monotonic() < deadline, "no rounds recorded"
            time.sleep(0.02)
        kernel.interrupt_kernel()
        reply = client.get_shell_msg(timeout=120)
        while reply["parent_header"].get("msg_id") != asked:
            reply = client.get_shell_msg(timeout=120)
        assert reply["content"]["status"] == "error", reply["content"]
        assert reply["content"]["ename"] == "ExperimentInterrupted", reply["content"]
        assert f"agentsim.open({str(out)!r})" in reply["content"]["evalue"]
        shown: list[str] = []
        client.execute_interactive(f"print(sorted(set(agentsim.open({str(out)!r}).runs()['status'])))", timeout=120,
                                   output_hook=lambda message: shown.append(message["content"].get("text", "")))
        assert "['interrupted']" in "".join(shown)
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=True)
    connection = sqlite3.connect(f"file:{out}/agentsim.db?mode=ro", uri=True)
    played = connection.execute("SELECT run, MAX(round) FROM rounds GROUP BY run").fetchall()
    connection.close()
    assert all(rounds < MAX_ROUNDS / 2 for _, rounds in played), played


