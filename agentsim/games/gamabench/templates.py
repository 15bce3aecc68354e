"""Reading prompt templates in GAMA-Bench's `prompt_template/` format, from the user's own
copy of its repository (never vendored: its texts are GPL-3.0) or from agentsim's own wording.

The format: one text file per prompt, game and version, `FOLDER/KIND_VERSION.txt` (e.g.
`guessing_game/request_v3.txt`); what precedes the line `<commentblockmarker>###</commentblockmarker>`
is a comment (GAMA-Bench lists the inputs there); the rest is the text, with `!<INPUT k>!` for
the k-th input and `<part>///</part>` between the messages of a multi-message prompt (a round's
report: what the game says, the player's own answer as the assistant, what follows). Five
versions a game, `v1` (the default) to `v5`, are rephrasings of the same prompts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError

MARKER = "<commentblockmarker>###</commentblockmarker>"
PART = "<part>///</part>"
VERSIONS = ("v1", "v2", "v3", "v4", "v5")
MAX_TEMPLATE_BYTES = 256 * 1024
_INPUT = re.compile(r"!<INPUT (\d+)>!")

# The prompts each game's folder holds, by kind (what the game sends when).
KINDS: dict[str, tuple[str, ...]] = {
    "guessing_game": ("description", "request", "report"),
    "bar_game": ("description", "request", "report_explicit", "report_implicit"),
    "divide_dollar": ("description", "request", "report"),
    "public_goods": ("description", "request", "report"),
    "diner_dilemma": ("description", "request", "report"),
    "sealed_bid_auction": ("description", "request", "report"),
    "battle_royale": ("description", "request", "report", "report2"),
    "pirate_game": ("description", "request1", "request2", "report"),
}


@dataclass(frozen=True, kw_only=True)
class PromptTemplate:
    """One prompt's text, its inputs still to fill."""

    name: str
    text: str

    @property
    def inputs(self) -> int:
        """How many inputs the text uses (one more than the highest k of `!<INPUT k>!`)."""
        return max((int(found) + 1 for found in _INPUT.findall(self.text)), default=0)

    def render(self, *inputs: object) -> list[str]:
        """The prompt's messages, inputs filled in (one message unless the text has parts)."""
        if len(inputs) < self.inputs:
            raise ValueError(f"{self.name} uses {self.inputs} inputs, {len(inputs)} given")
        text = _INPUT.sub(lambda found: str(inputs[int(found.group(1))]), self.text)
        return [part.strip() for part in text.split(PART)]


def parse_template(name: str, content: str) -> PromptTemplate:
    """A template from a file's text; a UserError if it lacks the marker line."""
    if MARKER not in content:
        raise UserError(f"{name}: not a prompt template in GAMA-Bench's format (no '{MARKER}' line before the text); "
                        f"point at the prompt_template/ folder of a GAMA-Bench checkout")
    return PromptTemplate(name=name, text=content.split(MARKER, 1)[1].strip())


def read_template(path: Path) -> PromptTemplate:
    if not path.is_file():
        raise UserError(f"no prompt template '{path}'; point at the prompt_template/ folder of a GAMA-Bench checkout "
                        f"(it holds one folder per game, e.g. guessing_game/request_v1.txt)")
    if path.stat().st_size > MAX_TEMPLATE_BYTES:
        raise UserError(f"'{path}' is larger than {MAX_TEMPLATE_BYTES >> 10} KiB, not a prompt template")
    try:
        content = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"'{path}' is not UTF-8 text, not a prompt template") from None
    return parse_template(path.as_posix(), content)


def load_templates(root: Path | str, game: str, version: str = "v1") -> dict[str, PromptTemplate]:
    """Every prompt of `game` in `version`, by kind, from a `prompt_template/` folder."""
    if game not in KINDS:
        raise UserError(f"no GAMA-Bench game '{game}'; one of {', '.join(KINDS)}")
    if version not in VERSIONS:
        raise UserError(f"prompt version '{version}' is not one of {', '.join(VERSIONS)}")
    folder = Path(root) / game
    if not folder.is_dir():
        raise UserError(f"'{root}' has no folder '{game}'; point at the prompt_template/ folder of a GAMA-Bench checkout")
    return {kind: read_template(folder / f"{kind}_{version}.txt") for kind in KINDS[game]}
