"""Targets: the systems under test, reached over HTTP or called in-process.

Build one from configuration with :func:`evaluator.factory.build_target`. The package holds
no names of its own: the configuration imports its light modules (the template grammar, the
default target name), and must not pay for the HTTP stack.
"""
