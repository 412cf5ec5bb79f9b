"""The pictures in docs/ were taken by ``make screenshots`` from the current templates."""

from __future__ import annotations

from tests.pages.image_sources import RECORD, expected_record


def test_the_screenshots_were_made_from_the_current_templates() -> None:
    """docs/images/SOURCES.txt names the templates' digest and each picture's: a template
    edited since, or a picture replaced by hand, means the pictures are stale."""
    assert RECORD.is_file(), "docs/images/SOURCES.txt is missing: run make screenshots"
    recorded = RECORD.read_text("utf-8")
    assert expected_record() == recorded, (
        "docs/images are not what the current templates render: run make screenshots"
    )
