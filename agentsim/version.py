"""The package's version, in a module of its own: the session records it and `--version` prints
it without importing the package's front (`agentsim/__init__.py` re-exports it)."""

__version__ = "0.1.0"
