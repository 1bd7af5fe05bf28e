"""Every ``awa`` command line shown in docs/ parses as written: ``$ awa ...`` in console
blocks (the other lines there are output), ``awa ...`` in bash blocks. Usage lines with
``[...]`` or ``...`` are grammar, not commands, and are left out."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from awa.cli import build_parser

DOCS = Path(__file__).resolve().parents[2] / "docs"
BLOCK = re.compile(r"```(console|bash)\n(.*?)```", re.DOTALL)


def _commands() -> list[tuple[str, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for language, block in BLOCK.findall(page.read_text()):
            prompt = "$ " if language == "console" else ""
            for line in block.splitlines():
                if not line.startswith(prompt):
                    continue
                command = line.removeprefix(prompt).strip()
                if not command.startswith("awa ") or "[" in command or "..." in command:
                    continue
                found.append((page.name, command))
    return found


COMMANDS = _commands()


@pytest.mark.parametrize(("page", "command"), COMMANDS, ids=[f"{p}:{c}" for p, c in COMMANDS])
def test_a_command_shown_in_the_docs_parses(page: str, command: str) -> None:
    words = shlex.split(command, comments=True)[1:]
    build_parser().parse_args(words)


def test_the_worker_and_queue_config_commands_are_shown() -> None:
    shown = " ".join(command for _, command in COMMANDS)
    assert "awa worker myapp.jobs:client" in shown
    assert "awa queue config media --dlq on" in shown
