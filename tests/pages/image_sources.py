"""What the pictures in docs/images were made from: a digest of the page templates and of
the script that takes them, beside each picture's own digest.

``make screenshots`` writes ``docs/images/SOURCES.txt``; ``test_screenshots_current`` reads
it back, so a template changed without new pictures (or a picture replaced by hand) fails
with the command that mends it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

__all__ = ["IMAGES", "RECORD", "expected_record", "sources_digest"]

REPO = Path(__file__).resolve().parents[2]
IMAGES = REPO / "docs" / "images"
RECORD = IMAGES / "SOURCES.txt"
TEMPLATES = REPO / "evaluator" / "pages" / "templates"
SCRIPT = Path(__file__).with_name("screenshots.py")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sources_digest() -> str:
    """One digest over every template (by name and content) and the screenshot script."""
    digest = hashlib.sha256()
    for path in [*sorted(TEMPLATES.glob("*.j2")), SCRIPT]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def expected_record() -> str:
    """The record as ``make screenshots`` writes it for the pictures now on disk."""
    lines = [f"sources {sources_digest()}"]
    lines += [f"{png.name} {_sha256(png)}" for png in sorted(IMAGES.glob("*.png"))]
    return "\n".join(lines) + "\n"
