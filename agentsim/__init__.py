"""agentsim: populations of LLM agents that meet, talk and play games, and what emerges.

From Python (agentsim/api.py): `agentsim.run(SCENARIO, ...)` runs an experiment and returns its
`Results` (pandas DataFrames, the report); `await agentsim.arun(...)` inside an event loop;
`agentsim.open(DIR)` reads a finished output directory. The game families live in
`agentsim.games` (`from agentsim.games.naming import NamingGame`); the Mesa model is
`agentsim.model.PopulationModel` (docs/mesa.md).
"""

__version__ = "0.1.0"

from .api import arun, open, run  # (after __version__, which the runner reads)
from .results import Results

__all__ = ["Results", "__version__", "arun", "open", "run"]
