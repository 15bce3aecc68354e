"""Backend specs, parsed in one place: `stand-in`, or `provider:target`.

Providers register a factory here; the factory gets the parsed spec and the scenario (the
stand-in answers with the scenario's rules) and returns a ready `LanguageModel`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import BackendSpecError
from .base import LanguageModel
from .standin import NAME as STAND_IN
from .standin import StandInModel

if TYPE_CHECKING:
    from ..scenario import Scenario


@dataclass(frozen=True)
class BackendSpec:
    provider: str
    target: str
    text: str


Factory = Callable[[BackendSpec, "Scenario[Any]"], LanguageModel]

PROVIDERS: dict[str, Factory] = {
    STAND_IN: lambda spec, scenario: StandInModel(scenario.standin_rules()),
}


def parse_spec(text: str) -> BackendSpec:
    text = text.strip()
    provider, _, target = text.partition(":")
    provider = provider.strip().lower()
    if provider not in PROVIDERS:
        known = ", ".join(sorted(PROVIDERS))
        raise BackendSpecError(f"unknown backend '{text}'; use one of: {known} (as provider:model where it needs one)")
    if provider != STAND_IN and not target.strip():
        raise BackendSpecError(f"backend '{text}' needs a target after the colon, e.g. {provider}:MODEL")
    return BackendSpec(provider, target.strip(), text)


def build_backend(text: str, scenario: Scenario[Any]) -> LanguageModel:
    spec = parse_spec(text)
    return PROVIDERS[spec.provider](spec, scenario)
