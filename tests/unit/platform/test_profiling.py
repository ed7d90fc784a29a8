"""`profiled(variable)`: a service's run under cProfile only when its variable names a file."""

import pstats
from pathlib import Path

import pytest

from boulevard.platform.profiling import profiled

VARIABLE = "BOULEVARD_TEST_PROFILE"


def busy() -> int:
    return sum(i * i for i in range(1000))


def test_with_the_variable_set_the_stats_of_the_block_are_written_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "stats"
    monkeypatch.setenv(VARIABLE, str(out))
    with profiled(VARIABLE):
        busy()
    called = {name for (_file, _line, name) in pstats.Stats(str(out)).stats}
    assert "busy" in called


def test_the_stats_are_written_when_the_block_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "stats"
    monkeypatch.setenv(VARIABLE, str(out))
    with pytest.raises(KeyboardInterrupt), profiled(VARIABLE):
        busy()
        raise KeyboardInterrupt
    assert out.stat().st_size > 0


@pytest.mark.parametrize("value", [None, ""])
def test_unset_or_empty_nothing_is_profiled(
    value: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if value is None:
        monkeypatch.delenv(VARIABLE, raising=False)
    else:
        monkeypatch.setenv(VARIABLE, value)
    monkeypatch.chdir(tmp_path)
    with profiled(VARIABLE):
        assert busy() == 332_833_500
    assert list(tmp_path.iterdir()) == []
