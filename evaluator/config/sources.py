"""Where settings come from, known without loading them (:mod:`evaluator.config` imports
pydantic, a tenth of a gate's time on two large reports).

Settings are read from a TOML file (``--config FILE``, else :data:`DEFAULT_CONFIG_PATH`
when it exists) and from ``EVALUATOR_*`` environment variables, over the defaults. With
neither, the settings are the defaults: :func:`nothing_configured` lets a command that
needs only a default (the gate, judging two saved reports) skip loading them.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_CONFIG_PATH", "ENV_PREFIX", "nothing_configured"]

#: The config file read when no ``--config`` is given, relative to the working directory.
DEFAULT_CONFIG_PATH = Path("config/evaluator.toml")
#: Every environment variable of a setting starts so (in any case).
ENV_PREFIX = "EVALUATOR_"


def nothing_configured(config_path: str | os.PathLike[str] | None) -> bool:
    """No config file given or found and no ``EVALUATOR_`` variable set: loading the
    settings would give the defaults (and could not fail)."""
    if config_path is not None or DEFAULT_CONFIG_PATH.is_file():
        return False
    return not any(name.upper().startswith(ENV_PREFIX) for name in os.environ)
