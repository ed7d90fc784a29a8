"""Build the standalone auditor wheel (auditor/pyproject.toml) from this tree.

    python tools/build_auditor.py DIR      # writes DIR/boulevard_auditor-*.whl, prints its path

It copies only the pure packages an auditor re-runs — boulevard.games, fairness,
accounting, audit, contract, and the protobuf messages of boulevard.api.v1 (not the gRPC
stubs) — into a staging folder beside auditor/pyproject.toml, refuses any import of gRPC,
NATS, the services or the platform code among them, and builds the wheel with pip.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIBS = ROOT / "libs" / "boulevard"
PACKAGES = ("games", "fairness", "accounting", "audit", "contract")
FORBIDDEN = ("grpc", "nats", "services", "boulevard.platform", "boulevard.messaging",
             "boulevard.eventlog", "boulevard.client", "boulevard.cli")  # fmt: skip


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def stage(into: Path) -> None:
    """The auditor's source tree in `into`: pyproject plus the pure packages."""
    shutil.copy(ROOT / "auditor" / "pyproject.toml", into / "pyproject.toml")
    target = into / "boulevard"
    target.mkdir()
    shutil.copy(LIBS / "__init__.py", target / "__init__.py")
    shutil.copy(LIBS / "py.typed", target / "py.typed")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(LIBS / package, target / package, ignore=ignore)
    api = target / "api" / "v1"
    api.mkdir(parents=True)
    shutil.copy(LIBS / "api" / "__init__.py", target / "api" / "__init__.py")
    shutil.copy(LIBS / "api" / "v1" / "__init__.py", api / "__init__.py")
    for pb2 in (LIBS / "api" / "v1").glob("*_pb2.py"):
        shutil.copy(pb2, api / pb2.name)
    bad = sorted(
        f"{path.relative_to(into)}: {name}"
        for path in target.rglob("*.py")
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    )
    if bad:
        raise SystemExit("the auditor would import what it must not:\n" + "\n".join(bad))


def build(out: Path) -> Path:
    """Build the wheel into `out`; its path."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        stage(Path(tmp))
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
             "--no-build-isolation", "--wheel-dir", str(out), tmp],
            check=True,
        )  # fmt: skip
    (wheel,) = out.glob("boulevard_auditor-*.whl")
    return wheel


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(build(Path(sys.argv[1])))
