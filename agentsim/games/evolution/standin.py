"""The stand-in for the cultural-evolution prompts: a documented, seeded rule that reads each
prompt as a model would (from its text alone) and answers in the format asked. Its results
are not LLM results; it exists so the whole path runs with no key and no GPU.

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
_CHAIN = re.compile(r"earlier partners did in previous rounds: (.*)")
_HELD = re.compile(r"You currently have ([\d.]+) units")


@dataclass(frozen=True, kw_only=True)
class EvolutionStandInSettings(StandInSettings):
    """The cultural-evolution stand-in's rule; `--set standin.invalid_rate=0.3`."""

    invalid_rate: float = 0.05  # a first attempt with no answer in it
    mutation: float = 15.0  # percentage points a mutation moves a number by, at most

    def validate(self) -> None:
        require(0 <= self.invalid_rate < 1, f"standin.invalid_rate must be in [0, 1) (got {self.invalid_rate})")
        require(self.mutation >= 0, f"standin.mutation must be >= 0 (got {self.mutation})")


class EvolutionStandIn:
    def __init__(self, settings: EvolutionStandInSettings = EvolutionStandInSettings()) -> None:
        self.settings = settings

    def answer(self, request: Request) -> str | None:
        messages = request.messages
        if len(messages) < 2:
            return None
        system, user = messages[0].content, messages[1].content
        attempt = (len(messages) - 2) // 2
        dice = unit_uniforms(request.seed or 0, 8)
        invalid = attempt == 0 and dice[7] < self.settings.invalid_rate
        donor = "One of you is a donor" in system
        if "starts: My strategy will be" in user:
            return self._strategy(user, donor, dice, invalid)
        if "My cultural norms are:." in user:
            return self._elicit(user, dice, invalid)
        if "My revised cultural norms are:" in user:
            return self._revise(user, dice, invalid)
        if "My new cultural norms are:" in user:
            return self._mutate_norms(user, dice, invalid)
        if "You will take the role of donor" in user:
            return self._donate(system, user, dice, invalid)
        if "Do you hunt a STAG or a HARE?" in user:
            return self._hunt(system, user, dice, invalid)
        return None

    # --- strategies ---------------------------------------------------------------------------
    def _strategy(self, user: str, donor: bool, dice: list[float], invalid: bool) -> str:
        if "Here is the advice of" in user:
            numbers = self._mutated(_numbers(user.split("Modify this advice to create your own strategy.")[1]), dice)
        elif "Here is the strategy of a surviving agent" in user:
            numbers = self._mutated(_numbers(user.split("previous generation:")[1]), dice)
        else:
            numbers = [round(30 + 40 * dice[0]), round(40 + 55 * dice[1]), round(10 + 50 * dice[2]), round(30 * dice[3])]
        thinking = "Thinking step by step: reciprocity rewards cooperation, but I must not be exploited."
        if invalid:
            return thinking
        return f"{thinking}\n{strategy_sentence(numbers, donor)}"

    def _mutated(self, numbers: list[int], dice: list[float]) -> list[int]:
        step = self.settings.mutation
        return [min(100, max(0, round(number + step * (2 * dice[i] - 1)))) for i, number in enumerate(numbers)]

    # --- norms ----------------------------------------------------------------------------------
    def _elicit(self, user: str, dice: list[float], invalid: bool) -> str:
        cooperative = 0.9 if "that are cooperative and altruistic" in user else 0.1 if "opposite of cooperative" in user else 0.5
        norms = []
        for i in range(5):
            pool = COOPERATIVE if dice[i] < cooperative else SELFISH
            norms.append(pool[int(dice[(i + 5) % 8] * 997 + i) % len(pool)])
        return _norms_reply("My cultural norms are:", _distinct(norms), invalid)

    def _revise(self, user: str, dice: list[float], invalid: bool) -> str:
        strategy = user.split("Here is your strategy in a game:")[1].split("\n")[0]
        current = _norm_lines(user.split("Here are your current cultural norms:")[1].split("Before summarizing")[0])
        numbers = _numbers(strategy)
        generosity = (numbers[1] + numbers[3]) / 200 if len(numbers) == 4 else 0.5
        norms = _swap_one(current, toward_cooperation=dice[0] < generosity, pick=dice[1], choose=dice[2])
        return _norms_reply("My revised cultural norms are:", norms, invalid)

    def _mutate_norms(self, user: str, dice: list[float], invalid: bool) -> str:
        current = _norm_lines(user.split("Here are your old cultural norms:")[1].split("You should randomly change")[0])
        norms = current if dice[0] < 0.5 else _swap_one(current, toward_cooperation=dice[1] < 0.5, pick=dice[2], choose=dice[3])
        return _norms_reply("My new cultural norms are:", norms, invalid)

    # --- playing ------------------------------------------------------------------------------------
    def _donate(self, system: str, user: str, dice: list[float], invalid: bool) -> str:
        held_match = _HELD.search(user)
        held = float(held_match.group(1).rstrip(".")) if held_match else 0.0
        first, high, bar, low = _strategy_numbers(user)
        chain = _CHAIN.search(user)
        latest = chain.group(1).split(". ")[0] if chain else ""
        seen = _NUMBERS.search(latest) if "donated" in latest else None
        if seen is not None:
            share = high if float(seen.group(1)) >= bar else low
        elif "punished" in latest or "refused" in latest:
            share = low
        else:
            share = first
        share = min(100.0, max(0.0, share + NORM_WEIGHT * _lean(system)))
        amount = round(held * share / 100, 2)
        reason = f"Justification:\nMy strategy says to give {share:.0f}% here, given what the recipient did last."
        if invalid:
            return reason + f"\nI will give {amount:g} units."
        answer = f"{amount:g}"
        if "Donate, x OR Punish, x" in user:
            answer = f"Punish, {round(held * 0.1, 2):g}" if share < 10 and dice[0] < 0.3 else f"Donate, {amount:g}"
        elif "Refuse to play" in user and share < 5 and dice[0] < 0.3:
            answer = "Refuse to play"
        return f"{reason}\n\nAnswer: {answer}"

    def _hunt(self, system: str, user: str, dice: list[float], invalid: bool) -> str:
        first, high, _bar, low = _strategy_numbers(user)
        seen = re.findall(r"In round \d+, you hunted a (?:STAG|HARE) and \S+ hunted a (STAG|HARE)\.", user)
        probability = first if not seen else high if seen[-1] == "STAG" else low
        probability = min(100.0, max(0.0, probability + NORM_WEIGHT * _lean(system)))
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


def _numbers(text: str) -> list[int]:
    """The four numbers of the first stand-in strategy sentence in `text`."""
    at = text.find("My strategy will be")
    found = [int(number) for number in _NUMBERS.findall(text[at:] if at >= 0 else text)[:4]]
    return found if len(found) == 4 else [50, 50, 50, 20]


def _strategy_numbers(user: str) -> tuple[float, float, float, float]:
    strategy = user.split("here is the strategy you decided to follow:")[1].split("\n")[0]
    first, high, bar, low = _numbers(strategy)
    return float(first), float(high), float(bar), float(low)


def _lean(system: str) -> float:
    """Cooperative minus selfish norms in the system prompt."""
    return float(sum(norm in system for norm in COOPERATIVE) - sum(norm in system for norm in SELFISH))


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
