"""Issue 37 (13): prompt template files a user writes. Invalid UTF-8 and `{unclosed` end with one
line and exit 2 (they were tracebacks); a field of the `[reminder]` section that nothing fills
(`{name_x}`), and a field that reaches into a value (`{0.__class__.__mro__}`, `{options.__class__}`),
are refused by the start-up check, before any run."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT, cli

STANDARD = (ROOT / "agentsim" / "games" / "naming" / "prompts" / "standard.txt").read_text(encoding="utf-8")


def reminder_with(field: str) -> str:
    head, separator, rest = STANDARD.partition("[reminder]\n")
    assert separator
    return f"{head}[reminder]\nPlease answer {field} with one of {{options}}.\n{rest.split(chr(10), 1)[1] if chr(10) in rest else ''}"


CASES = {
    "invalid_utf8": (STANDARD.encode("utf-8").replace(b"Player", b"Pl\xffayer", 1), "not UTF-8 text"),
    "unclosed": (STANDARD.replace("{options}", "{options", 1).encode(), "not format text"),
    "reminder_unknown": (reminder_with("{name_x}").encode(), "{name_x}"),
    "reminder_attribute": (reminder_with("{0.__class__.__mro__}").encode(), "{0.__class__.__mro__}"),
    "system_attribute": (STANDARD.replace("{options}", "{options.__class__}", 1).encode(), "{options.__class__}"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_broken_prompt_file_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    content, words = CASES[case]
    template = tmp_path / f"{case}.txt"
    template.write_bytes(content)
    out = tmp_path / "out"
    ran = cli(str(ROOT / "scenarios" / "naming_game.py"), "--set", f"prompt={template}", "--set", "max_rounds=2",
              "--no-live", "--out", str(out))
    assert ran.returncode == 2, ran.stderr
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentsim: error:") and words in lines[0], ran.stderr
    assert not (out / "agentsim.db").exists()  # refused before anything was recorded
