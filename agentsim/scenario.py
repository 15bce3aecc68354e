"""The Scenario base class: an experiment's parameters plus the hooks a run calls.

A scenario is immutable; everything that changes during a run lives in the model. The
scheduler only knows these hooks, so a new kind of experiment (a group meeting, selection
between generations) is a new scenario, not a new scheduler:

    build_population(model)   create the agents and their policies
    pairing(model)            who meets whom: the sequence of random pairs, rounds, a group
    draw(model, encounter)    every random draw an encounter needs; reads no agent's state
    start(model, encounter)   what the participants see, read from their state; draws nothing
    play(model, encounter)    ask the participants (async); returns their answers
    resolve(model, encounter, answers)
                              apply the outcome (memories, payoffs) and return its record
    new_metrics(model)        what is measured while the run goes
    stop_reason(model)        why the run should stop now, or None
    stop_distance(model, limit)
                              how many more records at least before it could (look-ahead)
    on_round_end(model)       between population rounds (selection, newcomers, reports)

    new_state(model)          the run's own state (`model.state`), checkpointed as plain data

Beside the rules a game gives its parts (agentsim/parts.py), each from one hook: a prompt
codec (`codec`, agentsim/codec.py) for agents that ask a language model (building messages,
parsing, re-asks, salvage, fallbacks and the store's encoding live there, and the policy is
handed it); the stand-in's rules (`standin_part`); and what a run shows of itself
(`readout`: live figures, Mesa's series, the run's summary).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar, cast

from .codec import Parsed as Parsed  # where families and user code found it before the codec
from .codec import PromptCodec, Situation
from .errors import ParameterError
from .params import Params, StandInSettings
from .parts import Readout, StandInPart

if TYPE_CHECKING:
    from .agents import PopulationAgent
    from .model import PopulationModel
    from .records import EncounterRecord
    from .scheduler import Encounter, Pairing

P = TypeVar("P", bound=Params)


S = TypeVar("S", bound=Situation)
St = TypeVar("St")


class RoundStats(Protocol):
    """One population round's line in the store's `rounds` table."""

    def as_dict(self) -> dict[str, Any]: ...


class RunMetrics(Protocol):
    """What is measured while a run goes (`Scenario.new_metrics`): it sees every record in
    order t, and hands the runner each finished round's line for the store."""

    def update(self, record: EncounterRecord) -> None: ...

    def pop_rounds(self, before: int) -> Iterable[tuple[int, RoundStats]]: ...


_CODEC = "prompts are the codec's now: subclass the game's codec and return it from `codec`"
_STAND_IN = ("the stand-in's rules and the parameters they ignore are a part now: return "
             "StandInPart(rules=..., ignores=...) from `standin_part` (agentsim/parts.py)")
_READOUT = ("what a run shows is a part now: subclass Readout (live_figures, model_series, run_summary) "
            "and return it from `readout` (agentsim/parts.py)")
_MOVED_HOOKS = {
    **dict.fromkeys(("messages", "parse", "reminder", "salvage", "fallback", "encode", "decode", "rebuild_messages",
                     "readable_probes", "unreadable_advice"), _CODEC),
    **dict.fromkeys(("standin_rules", "standin_ignores"), _STAND_IN),
    **dict.fromkeys(("live_figures", "model_series", "run_summary", "live_metrics"), _READOUT),
    "model_state": "a run's own state is made by `new_state` (model.state) and checkpointed with it",
    "restore_model_state": "a run's own state is made by `new_state` (model.state) and checkpointed with it",
}


def scenario_repr(scenario: Scenario[Any, Any, Any]) -> str:
    """A scenario as its class and what differs from its defaults, `NamingGame(agents=6,
    committed=2)`: what a `mesa.batch_run` row or a notebook shows of it."""
    cls = type(scenario)
    changed = _changed(scenario.params, cls.Params())
    if scenario.standin != cls.standin:
        settings = ", ".join(f"{key}={value}" for key, value in _changed(scenario.standin, cls.standin))
        changed.append(("standin", f"{type(scenario.standin).__name__}({settings})"))
    return f"{cls.__name__}({', '.join(f'{key}={value}' for key, value in changed)})"


class Scenario(Generic[P, S, St]):
    """Base of every experiment: the rules of a game over parameters `P`, whose agents are
    shown situations `S` (through the prompt codec, `codec`) and whose run keeps its world
    in a state `St` (`new_state`: `model.state`). Subclass it, set `name` and `Params`,
    override hooks."""

    name: ClassVar[str] = "scenario"
    Params: ClassVar[type[Params]] = Params
    # True where every agent follows a rule (theory baselines): no backend is asked, and the
    # store, the summary, the view and the report say "rule agents", not the stand-in.
    rule_agents: ClassVar[bool] = False
    # True where no call depends on another's answer (agents that never remember: the bias and
    # strategy probes): `--batch` may then ask them all at once through a batch API (llm/batches.py).
    independent_calls: ClassVar[bool] = False
    # The built-in stand-in's settings (its rule's bias, noise, failure rates): a family's
    # game narrows the type and a subclass or `standin=` changes the value.
    standin: StandInSettings = StandInSettings()
    # The dtypes of the family's own columns in the results' DataFrames (agentsim/tables.py):
    # its run summary's keys, flat (`runs()`), and its rounds' tallies (`rounds()`), patterns
    # such as "productions.*" for keys the run names; so that a column has one dtype whatever
    # the runs did (a flip's round is Int64 whether every run flipped or none did).
    summary_dtypes: ClassVar[Mapping[str, str]] = {}
    round_dtypes: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse a subclass that overrides a hook the scenario no longer calls (the prompt
        hooks moved to the codec, the stand-in's to `standin_part`, the live view's, Mesa's
        series and the run's summary to `readout`, the run's extra state to `new_state`): left
        alone, it would be ignored without a word."""
        super().__init_subclass__(**kwargs)
        moved = sorted(name for name in _MOVED_HOOKS if name in vars(cls))
        if moved:
            raise TypeError(f"{cls.__qualname__} overrides {', '.join(moved)}, which a scenario no longer has: "
                            + "; ".join(dict.fromkeys(_MOVED_HOOKS[name] for name in moved))
                            + " (docs/writing-a-game.md)")

    def __init__(self, params: P | None = None, /, *, standin: StandInSettings | None = None, **changes: Any) -> None:
        # `Params` is the class of P (a class variable cannot name a type variable).
        base: P = params if params is not None else cast(P, self.Params())
        self.params: P = base.replace(**changes) if changes else base
        if standin is not None:
            expected = type(type(self).standin)
            if not isinstance(standin, expected):
                raise ParameterError(f"standin= takes {expected.__name__} for {type(self).__name__} "
                                     f"(got {type(standin).__name__})")
            self.standin = standin

    __repr__ = scenario_repr  # (a function of the module: the class keeps to the rules' hooks)

    def with_params(self, **changes: Any) -> Self:
        return type(self)(self.params.replace(**changes), standin=self.standin)

    def with_overrides(self, overrides: Mapping[str, str], values: Mapping[str, Any] | None = None) -> Self:
        """`--set KEY=VALUE` pairs: parameters, and the stand-in's settings as `standin.KEY`;
        with `values` (Python's own, used as they are) in the same change."""
        prefix = StandInSettings.key_prefix
        changes = {**overrides, **(values or {})}
        settings = {key.removeprefix(prefix): value for key, value in changes.items() if key.startswith(prefix)}
        texts = {key: text for key, text in overrides.items() if not key.startswith(prefix)}
        others = {key: value for key, value in (values or {}).items() if not key.startswith(prefix)}
        for key in texts | others:
            if key.startswith("standin_") and key not in self.params.field_names():  # the spelling before store version 5
                known = ", ".join(prefix + name for name in sorted(self.standin.field_names())) or "this scenario has none"
                raise ParameterError(f"unknown parameter '{key}': the stand-in's settings are set as {prefix}KEY=VALUE ({known})")
        return type(self)(self.params.with_overrides(texts, others), standin=self.standin).with_standin(settings)

    def with_standin(self, changes: Mapping[str, Any]) -> Self:
        """A copy with the stand-in's settings changed (`standin.KEY` without its prefix): text
        read as `--set` reads it, any other value used as it is. Rule agents ask no stand-in,
        so any change is refused for them, in one line, however it was given."""
        if not changes:
            return self
        if self.rule_agents:
            raise ParameterError(f"{type(self).__name__}'s agents follow a rule and ask no stand-in; "
                                 f"drop {', '.join(StandInSettings.key_prefix + key for key in changes)}")
        texts = {key: value for key, value in changes.items() if isinstance(value, str)}
        values = {key: value for key, value in changes.items() if not isinstance(value, str)}
        self.standin.refuse_unread(*values)
        return type(self)(self.params, standin=self.standin.with_overrides(texts).replace(**values))

    def for_experiment(self, seed: int) -> Self:
        """Resolve what is drawn once per experiment (a random name pool), shared by all runs."""
        return self

    def describe(self) -> dict[str, Any]:
        """What the store records about this scenario, beside its parameters."""
        return {"name": self.name, "class": f"{type(self).__module__}.{type(self).__qualname__}"}

    # --- hooks a run calls ---------------------------------------------------------------
    def build_population(self, model: PopulationModel[St]) -> None:
        raise NotImplementedError

    def pairing(self, model: PopulationModel[St]) -> Pairing:
        raise NotImplementedError

    async def play(self, model: PopulationModel[St], encounter: Encounter) -> object:
        """Ask the participants; change no state here (an interrupted encounter is asked again)."""
        raise NotImplementedError

    def resolve(self, model: PopulationModel[St], encounter: Encounter, answers: Any) -> EncounterRecord:
        """Apply the answers' outcome to the participants and return the record of it. Under
        `pairing=sequential` this runs as soon as the answers are in: read and change the
        participants (and agents `reads` names) only; anything about the whole population
        belongs in the metrics, which get the records in order t."""
        raise NotImplementedError

    def draw(self, model: PopulationModel[St], encounter: Encounter) -> object:
        """Every random draw the encounter needs (option orders, dice), from `model.random`,
        kept as `encounter.drawn`. Called in sequence order, possibly long before the
        encounter starts: read no agent's state here."""
        return None

    def start(self, model: PopulationModel[St], encounter: Encounter) -> object:
        """What the participants see (their memories, with what `draw` drew), kept as
        `encounter.views` for `play`. Called when the encounter starts, once every earlier
        encounter of its participants has resolved: read their state, and other agents'
        only if `reads` names them; draw nothing."""
        return encounter.drawn

    def reads(self, model: PopulationModel[St], encounter: Encounter) -> tuple[PopulationAgent, ...]:
        """Agents besides the participants whose state `start` reads (a neighbour's name):
        the encounter then also waits for their earlier encounters."""
        return ()

    def new_metrics(self, model: PopulationModel[St]) -> RunMetrics | None:
        return None

    def new_state(self, model: PopulationModel[St]) -> St:
        """The run's own state besides its agents' (a month's stock, a generation's order):
        `model.state`, made after the population is built, checkpointed as plain data (its
        class registered with the family: `Family(checkpoint_classes=...)`). None: none."""
        return cast(St, None)

    @property
    def codec(self) -> PromptCodec[S] | None:
        """How this game's LLM agents are prompted and their replies read (agentsim/codec.py);
        None for a game whose agents all follow rules. Handed to `LLMPolicy` when the
        population is built."""
        return None

    def stop_reason(self, model: PopulationModel[St]) -> str | None:
        return None

    def stop_distance(self, model: PopulationModel[St], limit: int) -> int | None:
        """At least how many more encounters must be recorded before `stop_reason` can name a
        reason, read from the records so far (metrics), or `limit` if not within `limit`.

        The sequential scheduler looks ahead no further than this (and a sliver more), so a
        run that stops by its rule asks few encounters past its stop, and two population
        rounds ahead while the stop is out of reach. Only a lower bound keeps the sliver the
        only cost; a bound too high costs calls after the stop (at most two rounds), one too
        low slows the run's end; neither changes the run.
        None (the default): no bound known; the scheduler then looks one population round
        ahead, and a run that stops asks that round's rest. A scenario that never stops by a
        rule of its own returns `limit`."""
        return None

    def on_round_end(self, model: PopulationModel[St]) -> None:
        """Between population rounds; the population may change here (generations)."""

    def max_rounds(self) -> int:
        return int(getattr(self.params, "max_rounds", 0))

    def standin_part(self) -> StandInPart:
        """How the built-in stand-in answers this game's prompts: its rules, built from
        `standin` (the settings), and the parameters they do not read (agentsim/parts.py)."""
        return StandInPart()

    def readout(self) -> Readout[St]:
        """What a run of this game shows: live figures, Mesa's series, the run's summary
        (agentsim/parts.py); made once per run, as `model.readout`."""
        return Readout()


class GivesScenario(Protocol):
    """An object a front door runs through the scenario it gives (a game on the layer,
    agentsim.gamekit, gives its engine): `as_scenario` calls `__scenario__()`, and its class's
    `__scenario_class__()` is the scenario class a recorded run is rebuilt with."""

    def __scenario__(self) -> Scenario[Any, Any, Any]: ...

    @classmethod
    def __scenario_class__(cls) -> type[Scenario[Any, Any, Any]]: ...


def scenario_class(value: type) -> type[Scenario[Any, Any, Any]] | None:
    """The scenario class a class stands for: a Scenario subclass itself, a game class's engine
    class (`__scenario_class__`); None for any other class."""
    if issubclass(value, Scenario):
        return value
    make = getattr(value, "__scenario_class__", None)
    made = make() if callable(make) else None
    return made if isinstance(made, type) and issubclass(made, Scenario) else None


def as_scenario(value: object) -> Scenario[Any, Any, Any] | None:
    """`value` as the scenario a run runs: a Scenario object as it is, a Scenario class built
    with its defaults, and an object that gives one through `__scenario__()` or a class through
    `__scenario_class__()` (a game on the layer, agentsim.gamekit, whose engine wraps it); None
    for anything else. The one
    place a front door (a scenario file, `agentsim.run`, `PopulationModel`) turns what it was
    given into a scenario, without importing the layer above the core."""
    if isinstance(value, type):
        made_class = scenario_class(value)
        return made_class() if made_class is not None else None
    if isinstance(value, Scenario):
        return value
    make = getattr(type(value), "__scenario__", None)
    made = make(value) if callable(make) else None
    return made if isinstance(made, Scenario) else None


def _changed(params: Params, defaults: Params) -> list[tuple[str, str]]:
    """The fields of `params` whose values differ from `defaults`', each as (name, repr)."""
    return [(field.name, repr(getattr(params, field.name))) for field in dataclasses.fields(params)
            if getattr(params, field.name) != getattr(defaults, field.name, _MISSING)]


_MISSING = object()
