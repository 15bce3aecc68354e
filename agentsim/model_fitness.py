"""Whether a run's models can play its scenario as configured, checked before any run starts.

- `--sample-locally` draws from exact option distributions, which exist only where the
  scenario's requests hold the reply to a choice grammar (llm/scoring.py): without one it is
  refused here with one line (the backend's side is refused where the backend is built,
  llm/choices.require_scoring).
- A model run in process (`local:`) is asked `PROBES` of the scenario's own prompts
  (`PromptCodec.readable_probes`, the scenario codec's: the requests its agents send, grammar and sampling included).
  If fewer than `READABLE` of its replies can be read, most decisions would be the game's
  fallbacks rather than the model's choices, and the run stops before it starts with the
  scenario's advice (exit 2, nothing recorded). Unconstrained, SmolLM2-135M writes a readable
  naming-game answer about one time in twenty-five.

A model on a server is not probed here (the calls may cost, and tests count them); a run on it
is stopped by the fallback breaker (`--max-fallback-share`) instead, and
`python -m agentsim check-model --backend SPEC` checks any model before a run.
`--no-model-check` skips the probe, and `--replay` needs none (it asks no model).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .errors import BackendError, UnfitModelError
from .llm.base import LanguageModel
from .llm.scoring import can_score
from .llm.specs import BackendOptions, parse_spec
from .scenario import Scenario

PROBES = 8
READABLE = 0.5  # the share of readable replies below which a run is refused


def refuse_unscorable(scenarios: Iterable[Scenario[Any, Any, Any]], options: BackendOptions) -> None:
    """Refuse `--sample-locally` where the scenario's requests carry no choice grammar."""
    if not options.sample_locally:
        return
    for scenario in scenarios:
        codec = scenario.codec
        probes = codec.readable_probes(1, 0) if codec is not None else []
        if codec is None or not probes:
            raise UnfitModelError(f"--sample-locally draws from exact option distributions, and {scenario.name}'s "
                                  f"requests have none (no choice grammar holds their replies); drop --sample-locally")
        if not can_score(probes[0][0]):
            raise UnfitModelError(f"--sample-locally draws from exact option distributions, which exist only when "
                                  f"the answer grammar holds each reply to a finite set; "
                                  f"{codec.unreadable_advice()}, or drop --sample-locally")


async def require_readable(scenarios: Iterable[Scenario[Any, Any, Any]], backends: Mapping[str, LanguageModel],
                           options: BackendOptions, seed: int) -> None:
    """Ask every in-process model the scenarios' probes; refuse a model whose replies mostly
    cannot be read."""
    if not options.model_check or options.replay:  # a replay asks no model: its answers are recorded
        return
    checked: set[tuple[Any, ...]] = set()  # a grid's variants that ask alike are checked once
    for scenario in scenarios:
        codec = scenario.codec
        probes = codec.readable_probes(PROBES, seed) if codec is not None else []
        if codec is None or not probes:
            continue
        first = probes[0][0]
        for spec, backend in backends.items():
            key = (spec, first.grammar, first.sampling, first.messages)
            # only a model run here (its provider's descriptor says so): probing it costs nothing but time
            if not parse_spec(spec).provider_info.in_process or key in checked:
                continue
            checked.add(key)
            readable = 0
            for request, situation in probes:
                try:
                    completion = await _bare(backend).complete(request)
                except BackendError:
                    continue  # no reply: not a readable one
                readable += codec.parse(completion.text, situation).problem is None
            if readable < READABLE * len(probes):
                advice = codec.unreadable_advice()
                raise UnfitModelError(
                    f"backend '{spec}' wrote a readable answer to {readable} of {len(probes)} of this scenario's prompts, "
                    f"so most decisions would be fallbacks, not its choices; {advice + '; ' if advice else ''}"
                    f"check the model with python -m agentsim check-model --backend {spec}, or run anyway with "
                    f"--no-model-check")


def _bare(model: LanguageModel) -> LanguageModel:
    """The provider under the wrappers: the probes are not the run's calls (no cache, no
    budget, no breaker)."""
    while (inner := getattr(model, "inner", None)) is not None:
        model = inner
    return model
