"""The dashboard ships whole in the wheel: templates, the stylesheet and the live-refresh script
are package data, and the app renders its pages from an unpacked wheel alone."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


def _build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("awa-*.whl")
    return wheel


def test_the_wheel_holds_every_template_and_static_file_and_renders_from_them(
    tmp_path: Path,
) -> None:
    wheel = _build_wheel(tmp_path / "dist")
    assets = sorted(
        f"awa/ui/{p.relative_to(UI).as_posix()}"
        for folder in ("templates", "static")
        for p in (UI / folder).rglob("*")
        if p.is_file()
    )
    assert any(a.endswith(".html") for a in assets)
    assert "awa/ui/static/live.js" in assets
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = [a for a in assets if a not in names]
        assert missing == [], f"not in the wheel: {missing}"
        archive.extractall(tmp_path / "unpacked")
    unpacked = str(tmp_path / "unpacked")
    result = subprocess.run(
        [sys.executable, "-c", f"WHEEL_DIR = {unpacked!r}\n{RENDER_FROM_WHEEL}"],
        env={**os.environ, "PYTHONPATH": unpacked},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "rendered from " + unpacked in result.stdout
