"""The one place the version is written; pyproject.toml reads it from here.

A module of its own, so that modules low in the layers (the report codec, the request
template) can read it without importing the package's public API.
"""

__version__ = "0.1.0"
