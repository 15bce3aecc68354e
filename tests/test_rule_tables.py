"""The rule tables of the reproduction docs (a reference's rule, where its code has it, and where
agentsim has it) cannot go stale: every row cites both sides by file and line, and each
agentsim citation, written `` `agentsim/PATH.py:LINE` (`token`) ``, names a line of that file
that holds the token. The reference side (another repository, `` `NAME: path:LINE` ``) is not
here to read: its citations are checked for their form."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT

# Each doc's rule table, by its header row: the reference's columns and agentsim's.
TABLES = {
    "docs/reproducing-govsim.md": "| rule | GovSim's code | agentsim |",
    "docs/reproducing-cultural-evolution.md": "| rule | their code | agentsim |",
    "docs/reproducing-gamabench.md": "| rule | GAMA-Bench's runner | agentsim, exact | agentsim's default |",
}
CITATION = re.compile(r"`((?:agentsim|scenarios)/[\w/]+\.py):(\d+)` \(`([^`]+)`\)")
MENTION = re.compile(r"(?<![\w/])(?:agentsim|scenarios)/[\w/]+\.py:\d+")  # not inside another repository's path
FOREIGN = re.compile(r"`[A-Za-z][\w.-]*: [\w./-]+:\d+(?:-\d+)?`")


def rows(doc: str, root: Path = ROOT) -> list[tuple[list[str], list[str]]]:
    """The table's rows as (header cells, row cells)."""
    lines = (root / doc).read_text(encoding="utf-8").splitlines()
    header = TABLES[doc]
    at = lines.index(header)
    names = [cell.strip() for cell in header.strip("|").split("|")]
    found = []
    for line in lines[at + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        assert len(cells) == len(names), f"{doc}: a row of {len(cells)} cells under {len(names)} columns: {line[:80]}"
        found.append((names, cells))
    return found


def problems(doc: str, root: Path = ROOT) -> list[str]:
    found = []
    for names, cells in rows(doc, root):
        rule = cells[0][:60]
        for name, cell in zip(names[1:], cells[1:]):
            if name.startswith("agentsim"):
                cited = CITATION.findall(cell)
                if not cited:
                    found.append(f"{rule}: no `agentsim/PATH.py:LINE` (`token`) under '{name}'")
                if len(MENTION.findall(cell)) != len(cited):
                    found.append(f"{rule}: an agentsim file:line under '{name}' without its (`token`)")
                for path, line, token in cited:
                    file = root / path
                    text = file.read_text(encoding="utf-8").splitlines() if file.is_file() else []
                    if not 1 <= int(line) <= len(text):
                        found.append(f"{rule}: {path}:{line} is no line of an agentsim file")
                    elif token not in text[int(line) - 1]:
                        found.append(f"{rule}: {path}:{line} does not hold `{token}` (it reads: "
                                     f"{text[int(line) - 1].strip()[:80]!r})")
            elif not FOREIGN.search(cell):
                found.append(f"{rule}: no `NAME: path:LINE` under '{name}'")
    return found


@pytest.mark.parametrize("doc", sorted(TABLES))
def test_every_row_cites_both_sides_and_agentsims_lines_hold_what_they_cite(doc: str) -> None:
    assert rows(doc), f"{doc} has no rule table"
    assert problems(doc) == []


def test_a_stale_citation_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = tmp_path / "docs" / "x.md"
    doc.parent.mkdir()
    header = "| rule | their code | agentsim |"
    doc.write_text(f"{header}\n|---|---|---|\n"
                   "| a | `ref: a.py:3` | `agentsim/errors.py:1` (`no such text`) |\n"
                   "| b | `ref: a.py` | the same (`agentsim/errors.py:99999` (`x`)) |\n"
                   "| c | `ref: a.py:1` | `agentsim/errors.py:2` |\n", encoding="utf-8")
    monkeypatch.setitem(TABLES, "docs/x.md", header)
    (tmp_path / "agentsim").symlink_to(ROOT / "agentsim")
    found = problems("docs/x.md", tmp_path)
    assert any("does not hold `no such text`" in problem for problem in found)
    assert any("is no line of an agentsim file" in problem for problem in found)
    assert any("no `NAME: path:LINE`" in problem for problem in found)
    assert any("no `agentsim/PATH.py:LINE` (`token`)" in problem for problem in found)
