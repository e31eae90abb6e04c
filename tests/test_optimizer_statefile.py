"""``optimizer/statefile``: the JSON-lines history the Claude hook appends to survives a writer killed mid-line."""

from __future__ import annotations

import json
from pathlib import Path

from gitpilot.optimizer import hookfast, statefile


def test_a_line_cut_short_by_a_killed_writer_loses_no_later_record(tmp_path: Path) -> None:
    common = tmp_path / "common"
    path = Path(hookfast.history_path(str(common)))
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"session": "a", "streak": 4}\n{"session": "b", "str')  # killed mid-line
    statefile.append_line(str(path), {"session": "c", "streak": 7})
    statefile.append_line(str(path), {"session": "d", "streak": 2})
    lines = path.read_bytes().split(b"\n")
    assert lines[1] == b'{"session": "b", "str'  # the cut line stays whole and alone
    assert [json.loads(ln)["session"] for ln in lines[2:] if ln] == ["c", "d"]
    assert hookfast.read_history(str(common)) == [4, 7, 2]


def test_appends_to_a_new_file_add_no_blank_line(tmp_path: Path) -> None:
    path = tmp_path / "pilot" / "history.jsonl"
    for i in range(3):
        statefile.append_line(str(path), {"i": i})
    assert path.read_text() == "".join(f'{{"i": {i}}}\n' for i in range(3))
