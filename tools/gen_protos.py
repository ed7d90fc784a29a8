"""Generate Python code (messages, gRPC stubs, mypy stubs, Connect stubs) from protos/ into
libs/boulevard/api.

The Connect stubs (`*_connect.py`, protoc-gen-connectrpc with `protobuf=google`, so they use
the same message classes as the gRPC code) give Python a Connect/gRPC-Web client of every
service and the routes the browser gateway serves (services/gateway).

The protos live in package `boulevard.v1` but our Python package is also `boulevard`, so the
generated `from boulevard.v1 import x_pb2` lines are rewritten to `boulevard.api.v1`.
`--check` regenerates into a temporary folder and fails if the committed code differs.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

ROOT = Path(__file__).resolve().parent.parent
PROTOS = ROOT / "protos"
OUT = ROOT / "libs" / "boulevard" / "api"
IMPORT = re.compile(r"^from boulevard\.v1 import", re.MULTILINE)


def generate(out: Path) -> None:
    # protoc finds the mypy plugins on PATH: they live beside this interpreter.
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    files = sorted(
        str(p.relative_to(PROTOS)) for p in (PROTOS / "boulevard" / "v1").glob("*.proto")
    )
    with tempfile.TemporaryDirectory() as tmp:
        include = Path(protoc.__file__).parent / "_proto"
        code = protoc.main(
            [
                "protoc",
                f"-I{PROTOS}",
                f"-I{include}",
                f"--python_out={tmp}",
                f"--grpc_python_out={tmp}",
                f"--mypy_out={tmp}",
                f"--mypy_grpc_out={tmp}",
                f"--connectrpc_out={tmp}",
                "--connectrpc_opt=protobuf=google",
                *files,
            ]
        )
        if code != 0:
            raise SystemExit(f"protoc failed with exit code {code}")
        target = out / "v1"
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        (target / "__init__.py").write_text(
            '"""Generated from protos/boulevard/v1. Do not edit."""\n'
        )
        for path in sorted((Path(tmp) / "boulevard" / "v1").iterdir()):
            text = IMPORT.sub("from boulevard.api.v1 import", path.read_text())
            (target / path.name).write_text(text)
    (out / "__init__.py").write_text('"""Code generated from protos/ by tools/gen_protos.py."""\n')


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if committed code drifted")
    args = parser.parse_args()
    if not args.check:
        generate(OUT)
        print(f"generated {OUT.relative_to(ROOT)}/v1")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(Path(tmp))
        cmp = filecmp.dircmp(Path(tmp) / "v1", OUT / "v1")
        drift = cmp.left_only + cmp.right_only + cmp.diff_files
        if drift:
            print("generated code differs from protos/: " + ", ".join(sorted(drift)))
            print("run `make proto` and commit the result")
            return 1
    print("generated code matches protos/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
