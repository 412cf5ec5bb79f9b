"""The on-call runbook as a page: ``deploy/RUNBOOK.md``, shipped in the package, rendered.

The daemon serves it at ``/runbook``, so an alert's ``runbook_url`` resolves without a wiki:
the shipped rules link ``http://127.0.0.1:9464/runbook#<alert>`` (the daemon's default
address) until ``--runbook-base`` says where the team reads it. Each heading gets the anchor
a code host gives it (``## RagEvalGateFailing`` -> ``#ragevalgatefailing``), so a link works
on either. CommonMark with tables (markdown-it-py), raw HTML off: the page's content is text.
"""

from __future__ import annotations

import re
from importlib import resources

import markupsafe
from markdown_it import MarkdownIt

__all__ = ["RUNBOOK_SOURCE", "anchor", "runbook_html"]

#: the runbook as the package ships it (a copy of deploy/RUNBOOK.md, kept identical by
#: tests/daemon/test_runbook.py)
RUNBOOK_SOURCE = resources.files("evaluator.pages").joinpath("data/RUNBOOK.md")

_NOT_IN_ANCHOR = re.compile(r"[^\w\- ]", re.UNICODE)


def anchor(heading: str) -> str:
    """The anchor a code host gives a heading: lower case, punctuation dropped, spaces as
    hyphens (``RagEvalGateFailing`` -> ``ragevalgatefailing``)."""
    return _NOT_IN_ANCHOR.sub("", heading.strip().lower()).replace(" ", "-")


def runbook_html(text: str) -> markupsafe.Markup:
    """``text`` (Markdown) as HTML, every heading with its anchor as ``id``."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    tokens = md.parse(text)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and i + 1 < len(tokens):
            token.attrSet("id", anchor(tokens[i + 1].content))
    # markdown-it escapes every text it renders (raw HTML is off): the result is markup
    return markupsafe.Markup(md.renderer.render(tokens, md.options, {}))
