"""The dashboard ships whole in the wheel: templates, the stylesheet and the live-refresh script
are package data, and the app renders its pages from an unpacked wheel alone."""

from __future__ import annotations

from pathlib import Path

from tests.wheel import ROOT, build_wheel, run_from_wheel

UI = ROOT / "src" / "awa" / "ui"

RENDER_FROM_WHEEL = """
import warnings, awa, awa.ui
warnings.simplefilter("ignore")
from starlette.testclient import TestClient
from awa.adapters.memory import MemoryStore
assert awa.__file__.startswith(WHEEL_DIR), awa.__file__
app = awa.ui.create_app(MemoryStore())
client = TestClient(app, base_url="http://127.0.0.1", client=("127.0.0.1", 1))
for path in ("/", "/jobs", "/dlq", "/static/awa.css", "/static/live.js"):
    response = client.get(path)
    assert response.status_code == 200, (path, response.status_code)
print("rendered from", awa.__file__)
"""


def test_the_wheel_holds_every_template_and_static_file_and_renders_from_them(
    tmp_path: Path,
) -> None:
    wheel = build_wheel(tmp_path / "dist")
    assets = sorted(
        f"awa/ui/{p.relative_to(UI).as_posix()}"
        for folder in ("templates", "static")
        for p in (UI / folder).rglob("*")
        if p.is_file()
    )
    assert any(a.endswith(".html") for a in assets)
    assert "awa/ui/static/live.js" in assets
    unpacked, result = run_from_wheel(wheel, assets, RENDER_FROM_WHEEL, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "rendered from " + unpacked in result.stdout
