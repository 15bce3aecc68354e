"""The Mesa SolaraViz page of a `PopulationModel` (agentsim/viz.py, issue 39): rendered by
Solara as Mesa's own tests render it (`solara.render`, its widgets in process), Step plays a
population round and the figures card follows, Reset builds a fresh model from the page's
parameters (a slider's value included). Skipped without the `viz` extra."""

from __future__ import annotations

import re
from typing import Any

import pytest

solara = pytest.importorskip("solara")
ipywidgets = pytest.importorskip("ipywidgets")
v = pytest.importorskip("ipyvuetify")
pytest.importorskip("mesa.visualization")

from agentsim.games.naming import NamingGame  # noqa: E402
from agentsim.viz import population_page  # noqa: E402


def widgets(root: Any) -> list[Any]:
    """Every widget under `root`: children, and the items of Solara's draggable grid."""
    found, stack = [], [root]
    while stack:
        widget = stack.pop()
        found.append(widget)
        children = list(getattr(widget, "children", None) or [])
        items = getattr(widget, "items", None)
        if isinstance(items, list):
            children.extend(items)
        stack.extend(child for child in children if isinstance(child, ipywidgets.Widget))
    return found


def card(root: Any) -> str:
    """The figures card's text."""
    (html,) = [widget.unsafe_innerHTML for widget in widgets(root)
               if isinstance(getattr(widget, "unsafe_innerHTML", None), str) and "interactions" in widget.unsafe_innerHTML]
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_step_and_reset_in_mesa_solaraviz() -> None:
    @solara.component
    def Page() -> Any:
        with solara.AppLayout():
            population_page(NamingGame, agents=8, seed=3,
                            model_params={"agents": {"type": "SliderInt", "value": 8, "min": 4, "max": 20, "step": 2}})

    box, rendered = solara.render(Page(), handle_error=False)
    first = card(box)
    assert "round 0 of" in first and "0 interactions" in first and "seed 3" in first
    step = rendered.find(v.Btn, children=["Step"])
    step.widget.click()
    step.widget.click()
    stepped = card(box)
    assert "round 2 of" in stepped and "8 interactions" in stepped  # two rounds of N/2 = 4 encounters
    assert "success" in stepped and "calls 16," in stepped  # the family's figures, two calls per encounter

    slider = rendered.find(v.Slider, label="agents")
    slider.widget.v_model = 12
    rendered.find(v.Btn, children=["Reset"]).widget.click()
    reset = card(box)
    assert "round 0 of" in reset and "12 agents" in reset and "seed 3" in reset
    step.widget.click()
    assert "round 1 of" in card(box) and "6 interactions" in card(box)  # the new population: N/2 = 6
