"""The pure packages are what an auditor re-runs: no I/O, clock or global randomness."""

import ast
from pathlib import Path

import pytest

LIBS = Path(__file__).resolve().parents[2] / "libs" / "boulevard"
PURE = ["games", "fairness", "accounting"]
BANNED = {
    "random", "time", "datetime", "asyncio", "logging", "structlog", "socket",
    "subprocess", "threading", "secrets", "nats", "grpc", "google", "os", "shutil",
    "urllib", "http", "boulevard.api", "boulevard.platform", "boulevard.messaging",
    "boulevard.eventlog", "boulevard.client", "services",
}  # fmt: skip


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def banned(name: str) -> bool:
    return any(name == b or name.startswith(b + ".") for b in BANNED)


@pytest.mark.parametrize("package", PURE)
def test_pure_packages_import_nothing_with_io(package: str) -> None:
    offenders = {
        f"{path.relative_to(LIBS)}: {name}"
        for path in (LIBS / package).rglob("*.py")
        for name in imports_of(path)
        if banned(name)
    }
    assert not offenders, "\n".join(sorted(offenders))
