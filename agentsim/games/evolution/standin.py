"""The stand-in for the cultural-evolution prompts: a documented, seeded rule that answers in
the format asked from the call's situation (`prompts.Task`, `DonorView`, `StagView`: what the
prompt shows, nothing more), reading numbers only where a model would, in the strategies'
and the chain's words. Its results are not LLM results; it exists so the whole path runs with
no key and no GPU.

- Strategies are one sentence with numbers the rule reads back when it plays: a Donor game
  strategy gives `first`% to a recipient it knows nothing about, `high`% to one whose last
  donation was at least `bar`%, `low`% otherwise; a Stag Hunt strategy hunts a stag with
  probability `first`% in the first round, `high`% after a partner's stag, `low`% after a
  hare. The first generation draws them; a newcomer takes the best-scoring advice (or its
  parent's strategy) and moves each number by up to `mutation` points.
- Norms are five lines from two pools, cooperative and selfish; elicitation draws each from
  the cooperative pool with probability 1/2 (0.9 for Pos, 0.1 for Neg); revision replaces one
  norm, toward the cooperative pool with probability equal to the strategy's generosity;
  mutation swaps one norm for one of the other pool with probability 1/2.
- Playing, each cooperative norm in the system prompt adds `NORM_WEIGHT` points to what the
  strategy says (each selfish one takes them away), so norms change play.
- A first attempt fails to give an answer with probability `invalid_rate`.

(`mutation` and `invalid_rate` are `EvolutionStandInSettings`, the scenario's `standin`.)
Its dice come from the request's seed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ...llm.base import Request
from ...params import StandInSettings, require
from ...seeding import unit_uniforms
from .prompts import STRATEGY_MARKER, DonorView, StagView, Task

COOPERATIVE = (
    "When someone shares with you, share back at least as much.",
    "Help a neighbour in need even when no one is watching.",
    "Give newcomers the benefit of the doubt.",
    "Split shared resources fairly among everyone who worked for them.",
    "Keep your promises to the group, even at a cost to yourself.",
    "Forgive a single lapse and offer cooperation again.",
    "Contribute generously to common projects.",
    "Trust others first and let them earn the trust back.",
)
SELFISH = (
    "Take care of your own interests before anyone else's.",
    "Never give away what you cannot get back with profit.",
    "Exploit the generosity of others when you can.",
    "Keep resources hidden from the group.",
    "Treat every stranger as a rival.",
    "Retaliate hard against anyone who crosses you.",
    "Let others pay for common projects.",
    "Admit no weakness and ask for no help.",
)
NORM_WEIGHT = 8.0
_NUMBERS = re.compile(r"(\d+)%")
_PARTNER_HUNTED = re.compile(r"In round \d+, you hunted a (?:STAG|HARE) and \S+ hunted a (STAG|HARE)\.")
_DEFAULT_NUMBERS = (50, 50, 50, 20)


@dataclass(frozen=True, kw_only=True)
class EvolutionStandInSettings(StandInSettings):
    """The cultural-evolution stand-in's rule; `--set standin.invalid_rate=0.3`."""

    invalid_rate: float = 0.05  # a first attempt with no answer in it
    mutation: float = 15.0  # percentage points a mutation moves a number by, at most

    def validate(self) -> None:
        require(0 <= self.invalid_rate < 1, f"standin.invalid_rate must be in [0, 1) (got {self.invalid_rate})")
        require(self.mutation >= 0, f"standin.mutation must be >= 0 (got {self.mutation})")


class EvolutionStandIn:
    def __init__(self, settings: EvolutionStandInSettings = EvolutionStandInSettings(), *, donor: bool = False,
                 punishment: str = "none") -> None:
        """`donor`: the Donor game's prompts (else the Stag Hunt's); `punishment`: the donor's
        answer format ("none", "costly" or "partner_choice"), as the game's prompts show them."""
        self.settings = settings
        self.donor = donor
        self.punishment = punishment

    def answer(self, request: Request) -> str | None:
        situation = request.situation
        if not isinstance(situation, (Task, DonorView, StagView)):
            return None  # another game's request
        attempt = (len(request.messages) - 2) // 2
        dice = unit_uniforms(request.seed or 0, 8)
        invalid = attempt == 0 and dice[7] < self.settings.invalid_rate
        if isinstance(situation, DonorView):
            return self._donate(situation, dice, invalid)
        if isinstance(situation, StagView):
            return self._hunt(situation, dice, invalid)
        kind = situation.kind
        if kind in ("strategy", "inherit", "mutate_strategy"):
            return self._strategy(situation, dice, invalid)
        if kind == "elicit":
            return self._elicit(situation.source, dice, invalid)
        if kind == "revise":
            return self._revise(situation, dice, invalid)
        return self._mutate_norms(situation.source, dice, invalid)

    # --- strategies ---------------------------------------------------------------------------
    def _strategy(self, task: Task, dice: list[float], invalid: bool) -> str:
        if task.kind == "strategy":
            numbers = [round(30 + 40 * dice[0]), round(40 + 55 * dice[1]), round(10 + 50 * dice[2]), round(30 * dice[3])]
        else:  # the advice of the survivors (best first), or one survivor's strategy
            numbers = self._mutated(_numbers(task.source, marked=True), dice)
        thinking = "Thinking step by step: reciprocity rewards cooperation, but I must not be exploited."
        if invalid:
            return thinking
        return f"{thinking}\n{strategy_sentence(numbers, self.donor)}"

    def _mutated(self, numbers: list[int], dice: list[float]) -> list[int]:
        step = self.settings.mutation
        return [min(100, max(0, round(number + step * (2 * dice[i] - 1)))) for i, number in enumerate(numbers)]

    # --- norms ----------------------------------------------------------------------------------
    def _elicit(self, seed: str, dice: list[float], invalid: bool) -> str:
        """`seed`: what the norms should be (prompts.NORM_SEEDS: Pos, Neg, or either)."""
        cooperative = 0.9 if seed.startswith("cooperative and altruistic") else 0.1 if "opposite of cooperative" in seed else 0.5
        norms = []
        for i in range(5):
            pool = COOPERATIVE if dice[i] < cooperative else SELFISH
            norms.append(pool[int(dice[(i + 5) % 8] * 997 + i) % len(pool)])
        return _norms_reply("My cultural norms are:", _distinct(norms), invalid)

    def _revise(self, task: Task, dice: list[float], invalid: bool) -> str:
        current = _norm_lines(task.norms)
        numbers = _numbers(_first_line(task.strategy))
        generosity = (numbers[1] + numbers[3]) / 200 if len(numbers) == 4 else 0.5
        norms = _swap_one(current, toward_cooperation=dice[0] < generosity, pick=dice[1], choose=dice[2])
        return _norms_reply("My revised cultural norms are:", norms, invalid)

    def _mutate_norms(self, old: str, dice: list[float], invalid: bool) -> str:
        current = _norm_lines(old)
        norms = current if dice[0] < 0.5 else _swap_one(current, toward_cooperation=dice[1] < 0.5, pick=dice[2], choose=dice[3])
        return _norms_reply("My new cultural norms are:", norms, invalid)

    # --- playing ------------------------------------------------------------------------------------
    def _donate(self, view: DonorView, dice: list[float], invalid: bool) -> str:
        held = float(f"{view.resources:g}")  # as the prompt shows it
        first, high, bar, low = _strategy_numbers(view.strategy)
        latest = _first_line(view.chain).split(". ")[0]
        seen = _NUMBERS.search(latest) if "donated" in latest else None
        if seen is not None:
            share = high if float(seen.group(1)) >= bar else low
        elif "punished" in latest or "refused" in latest:
            share = low
        else:
            share = first
        share = min(100.0, max(0.0, share + NORM_WEIGHT * _lean(view.norms)))
        amount = round(held * share / 100, 2)
        reason = f"Justification:\nMy strategy says to give {share:.0f}% here, given what the recipient did last."
        if invalid:
            return reason + f"\nI will give {amount:g} units."
        answer = f"{amount:g}"
        if self.punishment == "costly":
            answer = f"Punish, {round(held * 0.1, 2):g}" if share < 10 and dice[0] < 0.3 else f"Donate, {amount:g}"
        elif self.punishment == "partner_choice" and share < 5 and dice[0] < 0.3:
            answer = "Refuse to play"
        return f"{reason}\n\nAnswer: {answer}"

    def _hunt(self, view: StagView, dice: list[float], invalid: bool) -> str:
        first, high, _bar, low = _strategy_numbers(view.strategy)
        seen = _PARTNER_HUNTED.findall(view.history)
        probability = first if not seen else high if seen[-1] == "STAG" else low
        probability = min(100.0, max(0.0, probability + NORM_WEIGHT * _lean(view.norms)))
        choice = "STAG" if dice[0] * 100 < probability else "HARE"
        reason = f"Justification:\nMy strategy gives a stag a {probability:.0f}% chance in this round."
        return reason + (f"\nI hunt the {choice.lower()}." if invalid else f"\n\nAnswer: {choice}")


def strategy_sentence(numbers: list[int], donor: bool) -> str:
    first, high, bar, low = (numbers + [50, 50, 50, 50])[:4]
    if donor:
        return (f"My strategy will be to give {first}% of my resources when I know nothing about the recipient, "
                f"{high}% when the recipient last gave at least {bar}% and {low}% otherwise.")
    return (f"My strategy will be to hunt a stag with probability {first}% in the first round, {high}% after my "
            f"partner hunted a stag (threshold {bar}%) and {low}% after they hunted a hare.")


def _numbers(text: str, *, marked: bool = False) -> list[int]:
    """The four numbers of the first stand-in strategy sentence in `text` (with `marked`, only
    a sentence that starts with its marker counts: text written otherwise gives the default)."""
    at = text.find(STRATEGY_MARKER)
    if at < 0 and marked:
        return list(_DEFAULT_NUMBERS)
    found = [int(number) for number in _NUMBERS.findall(text[at:] if at >= 0 else text)[:4]]
    return found if len(found) == 4 else list(_DEFAULT_NUMBERS)


def _strategy_numbers(strategy: str) -> tuple[float, float, float, float]:
    """The numbers of the strategy an agent plays by, as its turn's prompt shows it (one line)."""
    first, high, bar, low = _numbers(_first_line(strategy))
    return float(first), float(high), float(bar), float(low)


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0]


def _lean(norms: str) -> float:
    """Cooperative minus selfish norms among the agent's (its system prompt's)."""
    return float(sum(norm in norms for norm in COOPERATIVE) - sum(norm in norms for norm in SELFISH))


def _norm_lines(text: str) -> list[str]:
    return [norm for norm in (*COOPERATIVE, *SELFISH) if norm in text] or list(COOPERATIVE[:2] + SELFISH[:3])


def _distinct(norms: list[str]) -> list[str]:
    kept: list[str] = []
    for norm in norms:
        pool = COOPERATIVE if norm in COOPERATIVE else SELFISH
        while norm in kept:
            norm = pool[(pool.index(norm) + 1) % len(pool)]
        kept.append(norm)
    return kept


def _swap_one(norms: list[str], *, toward_cooperation: bool, pick: float, choose: float) -> list[str]:
    old_pool, new_pool = (SELFISH, COOPERATIVE) if toward_cooperation else (COOPERATIVE, SELFISH)
    candidates = [i for i, norm in enumerate(norms) if norm in old_pool]
    if not candidates:
        return list(norms)
    changed = list(norms)
    changed[candidates[int(pick * len(candidates))]] = new_pool[int(choose * len(new_pool))]
    return _distinct(changed)


def _norms_reply(marker: str, norms: list[str], invalid: bool) -> str:
    listed = "\n".join(f"{number}. {norm}" for number, norm in enumerate(norms, 1))
    thinking = "Thinking step by step about which rules of thumb serve me and my group."
    return f"{thinking}\n{listed}" if invalid else f"{thinking}\n{marker}\n{listed}"
