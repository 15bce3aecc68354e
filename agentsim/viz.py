"""A Mesa SolaraViz page for a `PopulationModel`: a Mesa user steps an LLM population in the
browser as they step any Mesa model (Step, Play, Reset, the model's parameters as sliders),
seeing the family's own figures (`Scenario.live_figures`, what the terminal view shows) and
the scenario's series from the model's DataCollector as they grow.

    from agentsim.games.naming import NamingGame
    from agentsim.viz import population_page

    page = population_page(NamingGame, agents=10,
                           model_params={"agents": {"type": "SliderInt", "value": 10, "min": 4, "max": 40, "step": 2}})

`solara run app.py` serves it; in a notebook, `page` as a cell's last line shows it. Mesa's
visualization needs the `viz` extra (solara); nothing else in agentsim imports this module.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

import solara
from mesa.visualization.utils import update_counter

from .model import PopulationModel

if TYPE_CHECKING:
    from .scenario import Scenario


def population_page(scenario: Scenario[Any, Any, Any] | type[Scenario[Any, Any, Any]], *,
                    model_params: dict[str, Any] | None = None, seed: int | None = None, play_interval: int = 400,
                    name: str | None = None, **params: Any) -> Any:
    """Mesa's `SolaraViz` over `PopulationModel(scenario, seed=seed, **params)`: the figures
    card and a plot of the scenario's numeric series. `model_params` are Mesa's (sliders as
    `{"type": "SliderInt", ...}`, fixed values as themselves), passed to the model on Reset
    with `scenario` and `params`; without a `seed` among them, each Reset draws a fresh seed,
    shown on the card (as Mesa's models do)."""
    from mesa.visualization import SolaraViz, make_plot_component

    fixed: dict[str, Any] = {"scenario": scenario, **params} | ({"seed": seed} if seed is not None else {})
    values = {key: value["value"] if isinstance(value, dict) and "type" in value else value
              for key, value in (model_params or {}).items()}
    model = PopulationModel(**(fixed | values))
    plotted = [key for key, value in model.series().items() if not isinstance(value, str) and not key.endswith("_name")]
    components: list[Any] = [(FiguresCard, 0)]
    if plotted:
        components.append(make_plot_component(plotted))
    return SolaraViz(model, components=components, model_params=fixed | dict(model_params or {}),
                     name=name or f"agentsim: {model.scenario.name}", play_interval=play_interval)


def figures_html(model: PopulationModel) -> str:
    """The card's text: the run's state, the family's figures, the calls. Plain HTML, not
    Solara's Markdown, which loads KaTeX from a CDN: the page needs nothing from outside."""
    figures = model.readout.live_figures(model)
    usage = model.usage.total()
    limit = model.scenario.max_rounds()
    state = "over" + (f" ({model.stop_reason.replace('_', ' ')})" if model.stop_reason else "") if model.finished else "running"
    rows = [f"<b>{escape(type(model.scenario).__name__)}</b>, {len(model.agents)} agents, seed {model.seed}",
            f"round {model.rounds_done}{f' of {limit}' if limit else ''}, {model.completed} interactions: {state}"]
    if figures.success_rate is not None:
        rows.append(f"<b>success</b> {figures.success_rate:.0%}")
    ranked = sorted(figures.shares.items(), key=lambda item: -item[1])
    if ranked:
        shown = ", ".join(f"{escape(str(name))} {share:.0%}" for name, share in ranked[:6] if share > 0 or len(ranked) <= 4)
        rows.append(f"<b>{escape(figures.shares_label or 'names')}</b> {shown or '–'}")
        if figures.shares_note:
            rows.append(f"<small>{escape(figures.shares_note)}</small>")
    rows.extend(f"<b>{escape(label)}</b> {escape(text)}" for label, text in figures.lines)
    rows.append(f"<b>calls</b> {usage.calls}, {usage.invalid_replies} invalid, {usage.fallbacks} fallbacks, ${usage.cost_usd:.4f}")
    return "<br>".join(rows)


@solara.component
def FiguresCard(model: PopulationModel) -> Any:
    """The family's figures of the model now, updated after every step (Mesa's update counter)."""
    update_counter.get()
    with solara.Card("figures") as card:
        solara.HTML(tag="div", unsafe_innerHTML=figures_html(model), attributes={"class": "agentsim-figures"})
    return card
