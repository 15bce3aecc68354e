"""agentsim: populations of LLM agents that meet, talk and play games, and what emerges."""

__version__ = "0.1.0"
