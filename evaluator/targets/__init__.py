"""Targets: the systems under test, reached over HTTP or called in-process.

Build one from configuration with :func:`evaluator.factory.build_target`. The package holds
no names of its own: the configuration imports its light modules (the template grammar, the
presets, the default target name), and must not pay for the HTTP stack.

A new preset (a well-known API a target can be, ``kind = "..."``) is one entry of
:data:`evaluator.targets.presets.PRESETS`; a new request placeholder one entry of
:data:`evaluator.targets.templates.PLACEHOLDERS` and its value in ``placeholder_values``.
"""
