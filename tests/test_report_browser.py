"""The HTML report in a real browser (issue 30): headless Chromium loads it, every figure
decodes (no broken image), the tables are there, and a screenshot is taken.

`.ci/run` installs Debian's `chromium-headless-shell` with apt-get and sets
AGENTSIM_REQUIRE_BROWSER=1, so in CI a missing browser fails this test; elsewhere it is skipped
with the command that installs one. The report is built from a critical-mass search and a
free naming game on the stand-in, which also shows that `report` prints no warning (pytest
turns warnings into errors: the search's sizes end at different rounds, which once made
numpy warn about single-run columns)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import run_experiment

from agentsim.analysis.report import REPORT_HTML, build_report
from agentsim.games.naming import NamingGame
from agentsim.games.naming.critical_mass import CriticalMassSearch, search_both

BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser")
MARK = "agentsim-render-check"
# Run once the page has loaded: what a reader would see, written into the DOM that --dump-dom prints.
CHECK = f"""<script>
window.addEventListener("load", () => {{
  const images = [...document.images].map(img => ({{alt: img.alt, complete: img.complete,
    width: img.naturalWidth, height: img.naturalHeight}}));
  const tables = [...document.querySelectorAll("table")].map(table => table.rows.length);
  const pre = document.createElement("pre");
  pre.id = "{MARK}";
  pre.textContent = JSON.stringify({{images, tables, title: document.title,
    headings: [...document.querySelectorAll("h2")].map(h => h.textContent)}});
  document.body.appendChild(pre);
}});
</script>"""


def browser() -> str:
    found = next((path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        if os.environ.get("AGENTSIM_REQUIRE_BROWSER") or os.environ.get("CI"):
            pytest.fail("no headless Chromium: apt-get install -y chromium-headless-shell (.ci/run does)")
        pytest.skip("no headless Chromium here: apt-get install -y chromium-headless-shell")
    return found


def chromium(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           "--allow-file-access-from-files", "--virtual-time-budget=10000", *arguments],
                          capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    run_experiment(NamingGame(agents=8, names=("Q", "M"), max_rounds=8), root / "free", runs=2)
    search = CriticalMassSearch(scenario=NamingGame(agents=8, names=("Q", "M"), memory_length=3), majority="M",
                                alternative="Q", runs=2, max_rounds=12)
    search_both(search, root / "search")
    build_report(root)  # (warnings are errors here: the report prints none)
    return root / "report" / REPORT_HTML


def test_the_report_renders_in_a_browser(report: Path, tmp_path: Path) -> None:
    page = tmp_path / "checked.html"
    page.write_text(report.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    dumped = chromium("--dump-dom", page.as_uri(), cwd=tmp_path)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    found = re.search(rf'<pre id="{MARK}">(.*?)</pre>', dumped.stdout, re.S)
    assert found, "the page's check did not run: " + dumped.stdout[-500:]
    seen = json.loads(found.group(1).replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
                      .replace("&quot;", '"'))
    index = json.loads((report.parent / "report.json").read_text())
    assert len(seen["images"]) == len(index["figures"]) >= 3
    broken = [image["alt"] for image in seen["images"] if not (image["complete"] and image["width"] > 100
                                                               and image["height"] > 100)]
    assert not broken, f"figures that did not load: {broken}"
    assert len(seen["tables"]) >= len(index["tables"]) >= 1 and all(rows >= 2 for rows in seen["tables"])
    assert seen["title"].startswith("agentsim report")

    screenshot = tmp_path / "report.png"
    shot = chromium(f"--screenshot={screenshot}", "--window-size=1280,2400", report.as_uri(), cwd=tmp_path)
    assert shot.returncode == 0, shot.stderr[-2000:]
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
    keep = os.environ.get("AGENTSIM_SCREENSHOT")  # where to keep it for a look: AGENTSIM_SCREENSHOT=PATH
    if keep:
        shutil.copy(screenshot, keep)
