"""The same, in a real Jupyter kernel (ipykernel, run by nbclient as Jupyter runs a notebook):
`agentsim.run` leaves one output, the progress bar, updated in place to the finished state
(the text and the HTML Jupyter draws), and none with `progress=False`. Skipped where the
notebook packages (the dev extra's ipykernel and nbclient) are not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    "import agentsim\nfrom agentsim.games.naming import NamingGame",
    "results = agentsim.run(NamingGame(agents=8, max_rounds=6), runs=2, out='{out}/shown')",
    "quiet = agentsim.run(NamingGame(agents=8, max_rounds=2), out='{out}/quiet', progress=False)",
    "print(int(results.runs()['calls'].sum()))",
]


@pytest.mark.timeout(300)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_real_kernel_shows_the_bar_and_updates_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(cell.format(out=tmp_path)) for cell in CELLS]
    nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3").execute()
    shown = [output for output in notebook.cells[1].outputs if output.output_type == "display_data"]
    assert len(shown) == 1  # one output, updated in place
    text, html = shown[0].data["text/plain"], shown[0].data["text/html"]
    calls = int(notebook.cells[3].outputs[0].text)
    for drawn in (text, html):
        assert "naming_game" in drawn and "100%" in drawn and "runs 2/2" in drawn and f"calls {calls:,}" in drawn
        assert "fallbacks 0" in drawn and "took" in drawn
    assert not [output for output in notebook.cells[2].outputs if output.output_type == "display_data"]
