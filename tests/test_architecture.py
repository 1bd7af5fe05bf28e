"""The rooms of the house and what each may import (``docs/architecture.md``).

A room is a top-level module or package of ``awa``. Each names the rooms it may import; an
import of any other is a defect: it runs back up a floor or ties two rooms that should stay
apart (the stores never import each other, the dashboard never imports the CLI).
"""

from __future__ import annotations

import ast
import pathlib

import awa

SOURCE = pathlib.Path(awa.__file__).parent

GROUND = {"domain", "escaping", "redaction", "tracing"}
MAY_IMPORT: dict[str, set[str]] = {
    "domain": set(),
    "escaping": set(),
    "redaction": set(),
    "tracing": set(),
    "ports": {"domain"},
    "adapters": {"domain", "ports", "redaction", "escaping"},
    "runtime": {"domain", "ports", "escaping", "tracing"},
    "metrics": {"domain", "ports", "runtime"},
    "client": GROUND | {"ports", "adapters", "runtime"},
    "operations": GROUND | {"ports", "client"},
    # the rooms above the client may use the package's face (``import awa``)
    "testing": GROUND | {"ports", "adapters", "runtime", "client", "__init__"},
    "http": GROUND | {"ports", "client", "operations", "__init__"},
    "worker": GROUND | {"ports", "runtime", "metrics", "client", "__init__"},
    "ui": GROUND | {"ports", "client", "operations", "__init__"},
    "cli": GROUND
    | {"ports", "adapters", "runtime", "client", "operations", "__init__"}
    | {"testing", "http", "ui", "worker"},
    "__init__": GROUND | {"ports", "adapters", "runtime", "client"},
    "__main__": {"cli"},
}
#: a source file past this many lines holds more than one job: split it by what its parts do
LINES_MAX = 600
#: the stores stand side by side: none imports another
STORES = {"memory", "postgres", "sqlite"}


def _room(path: pathlib.Path) -> tuple[str, ...]:
    return path.relative_to(SOURCE).with_suffix("").parts


def _imported(path: pathlib.Path) -> set[tuple[str, ...]]:
    names: set[tuple[str, ...]] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            continue
        for module in modules:
            parts = tuple(module.split("."))
            if parts[0] == "awa":
                names.add(parts[1:] or ("__init__",))
    return names


def _sources() -> list[pathlib.Path]:
    return sorted(p for p in SOURCE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_room_is_named() -> None:
    rooms = {_room(path)[0] for path in _sources()}
    assert rooms == set(MAY_IMPORT), rooms ^ set(MAY_IMPORT)


def test_no_room_imports_one_it_may_not() -> None:
    wrong = []
    for path in _sources():
        room = _room(path)[0]
        for target in _imported(path):
            if target[0] != room and target[0] not in MAY_IMPORT[room]:
                wrong.append(f"{path.relative_to(SOURCE)} imports awa.{'.'.join(target)}")
    assert not wrong, "\n".join(wrong)


def test_the_stores_never_import_each_other() -> None:
    wrong = []
    for path in _sources():
        room = _room(path)
        if room[0] != "adapters" or len(room) < 3 or room[1] not in STORES:
            continue
        for target in _imported(path):
            if target[:1] == ("adapters",) and len(target) > 1 and target[1] in STORES - {room[1]}:
                wrong.append(f"{path.relative_to(SOURCE)} imports awa.{'.'.join(target)}")
    assert not wrong, "\n".join(wrong)


def test_no_source_file_is_over_the_line_bound() -> None:
    long = {
        str(path.relative_to(SOURCE)): lines
        for path in _sources()
        if (lines := len(path.read_text().splitlines())) > LINES_MAX
    }
    assert not long, long
