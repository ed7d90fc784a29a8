"""Regenerate the pictures in docs/screenshots/ that the README shows.

- `make-run.svg`: the README's `make run` capture (itself checked by tests/e2e/test_up.py),
  drawn as a terminal;
- `play-<game>.svg`, `play-<game>-end.svg`, `watch-lords_of_vegas.svg`: the play and
  watch screens, saved by tests/e2e/test_play.py while a person's seat plays real games;
- `audit-dice-report.png`, `audit-ledger-report.png`: headless Chromium's pictures of the
  audit reports, saved by tests/e2e/test_audit_report.py.

The last two are made by running those tests with BOULEVARD_UPDATE_SCREENSHOTS=1 (they
start the whole platform); `--capture-only` redraws make-run.svg alone.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "docs" / "screenshots"


def make_run_capture() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("<!-- make-run:begin -->", 1)[1].split("<!-- make-run:end -->", 1)[0]
    return block.strip().removeprefix("```text").removesuffix("```").strip("\n")


def draw_make_run() -> Path:
    console = Console(record=True, width=132, file=io.StringIO())
    console.print(make_run_capture(), markup=False, highlight=False, soft_wrap=True)
    path = SHOTS / "make-run.svg"
    path.write_text(console.export_svg(title="make run"), encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--capture-only", action="store_true", help="redraw make-run.svg only")
    args = parser.parse_args(argv)
    SHOTS.mkdir(parents=True, exist_ok=True)
    print(f"wrote {draw_make_run().relative_to(ROOT)}")
    if args.capture_only:
        return 0
    env = dict(os.environ, BOULEVARD_UPDATE_SCREENSHOTS="1")
    tests = ["tests/e2e/test_play.py", "tests/e2e/test_audit_report.py"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *tests], env=env, cwd=ROOT
    ).returncode


if __name__ == "__main__":
    sys.exit(main())
