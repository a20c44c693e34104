"""The version of qdarray (in its own module, so that every layer can read it)."""

__version__ = "0.1.0"
