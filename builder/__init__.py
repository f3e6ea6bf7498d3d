"""Static site generator for LLM-serving recipes backed by dated benchmark rows."""

__version__ = "0.1.0"
