"""agentsim: populations of LLM agents that meet, talk and play games, and what emerges.

From Python (agentsim/api.py): `agentsim.run(SCENARIO, ...)` runs an experiment and returns its
`Results` (pandas DataFrames, the report); `await agentsim.arun(...)` inside an event loop;
`agentsim.open(DIR)` reads a finished output directory. The game families live in
`agentsim.games` (`from agentsim.games.naming import NamingGame`); the Mesa model is
`agentsim.model.PopulationModel` (docs/mesa.md).

`import agentsim` imports nothing else until one of these is used: `python -m agentsim` runs
this file first, and takes SIGINT and SIGTERM as soon as it can (agentsim/__main__.py).
"""

from .version import __version__

TYPE_CHECKING = False  # (typing's own costs an import: mypy reads this name the same way)
if TYPE_CHECKING:
    from .api import arun, open, run
    from .results import Results

__all__ = ["Results", "__version__", "arun", "open", "run"]


def __getattr__(name: str) -> object:
    """`agentsim.run`, `.arun`, `.open` and `.Results`, imported on first use."""
    if name in ("arun", "open", "run"):
        from . import api  # lazy: `import agentsim` imports nothing until a name is used

        return getattr(api, name)
    if name == "Results":
        from .results import Results  # lazy: as above

        return Results
    raise AttributeError(f"module 'agentsim' has no attribute '{name}'")
