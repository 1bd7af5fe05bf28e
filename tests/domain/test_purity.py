"""The domain stays pure: no I/O, clocks, asyncio, logging, drivers or unseeded randomness."""

import ast
import pathlib
import sys

import awa.domain

DOMAIN = pathlib.Path(awa.domain.__file__).parent
# cronsim: pure calendar arithmetic (no I/O, no clock): the periodic schedules' fire times
ALLOWED_THIRD_PARTY = {"attrs", "cronsim"}
FORBIDDEN_STDLIB = {
    "asyncio",
    "logging",
    "os",
    "random",
    "socket",
    "subprocess",
    "sys",
    "threading",
    "time",
    "uuid",
}
FORBIDDEN_CALLS = ("datetime.now", "datetime.utcnow", "date.today", "open(", "print(")


def _imports(path: pathlib.Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_domain_imports_only_stdlib_attrs_and_itself() -> None:
    modules = sorted(DOMAIN.glob("*.py"))
    assert len(modules) >= 8
    for path in modules:
        for name in _imports(path):
            if name in {"awa", "__future__"}:
                continue
            assert name not in FORBIDDEN_STDLIB, f"{path.name} imports {name}"
            assert name in sys.stdlib_module_names or name in ALLOWED_THIRD_PARTY, (
                f"{path.name} imports {name}, which the pure domain must not depend on"
            )


def test_domain_imports_of_awa_stay_inside_the_domain() -> None:
    for path in DOMAIN.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("awa"):
                assert node.module.startswith("awa.domain"), f"{path.name} imports {node.module}"


def test_domain_never_reads_the_wall_clock_or_does_io() -> None:
    for path in DOMAIN.glob("*.py"):
        text = path.read_text()
        for call in FORBIDDEN_CALLS:
            assert call not in text, f"{path.name} calls {call}"
