"""memd: long-term memory for LLM agents and people, kept as plain Markdown."""

__version__ = "0.1.0"
