"""Every relative link and image in the README and docs/ points at a file of the repository,
and the screenshots the docs show are PNGs small enough to keep in git."""

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IMAGE_BYTES_MAX = 200_000


def _relative_targets(page: pathlib.Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)  # not inside examples
    targets = (target.split("#")[0] for target in LINK.findall(text))
    return [t for t in targets if t and not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_relative_links_point_at_files(page: pathlib.Path) -> None:
    missing = [t for t in _relative_targets(page) if not (page.parent / t).exists()]
    assert missing == [], f"{page.name} links to files that do not exist: {missing}"


def test_the_docs_images_are_small_pngs() -> None:
    images = sorted((ROOT / "docs" / "images").rglob("*"))
    pngs = [i for i in images if i.is_file()]
    assert pngs, "docs/ui.md shows screenshots from docs/images/ui"
    for image in pngs:
        data = image.read_bytes()
        assert data.startswith(PNG_SIGNATURE), image.name
        assert len(data) <= IMAGE_BYTES_MAX, f"{image.name}: {len(data)} bytes"
    shown = {t for page in PAGES for t in _relative_targets(page) if t.endswith(".png")}
    assert {f"images/{i.relative_to(ROOT / 'docs' / 'images')}" for i in pngs} <= shown
