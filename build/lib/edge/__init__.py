"""edge: a personal AI agent for a Raspberry Pi (the package root; holds the version)."""

__version__ = "0.1.0"
