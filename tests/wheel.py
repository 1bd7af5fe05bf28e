"""Testing what a wheel ships: build it, check files are in it, and run a script against the
unpacked wheel alone (``PYTHONPATH`` set to it, so the source tree is not what answers)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "hatchling", "build", "-t", "wheel", "-d", str(out)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    [wheel] = out.glob("awa-*.whl")
    return wheel


def run_from_wheel(
    wheel: Path, expected: Sequence[str], script: str, tmp_path: Path
) -> tuple[str, subprocess.CompletedProcess[str]]:
    """Check every name of ``expected`` is in ``wheel``, unpack it under ``tmp_path`` and run
    ``script`` there with ``WHEEL_DIR`` set; the unpacked folder and the finished process."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = [name for name in expected if name not in names]
        assert missing == [], f"not in the wheel: {missing}"
        archive.extractall(tmp_path / "unpacked")
    unpacked = str(tmp_path / "unpacked")
    result = subprocess.run(
        [sys.executable, "-c", f"WHEEL_DIR = {unpacked!r}\n{script}"],
        env={**os.environ, "PYTHONPATH": unpacked},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return unpacked, result
