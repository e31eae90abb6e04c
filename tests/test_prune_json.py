"""The JSON settings edit: the value lands in the right array; every other byte stays as the user wrote it."""

from __future__ import annotations

import json

import pytest

from gitpilot.errors import PilotError
from gitpilot.optimizer.prune_json import ensure_in_array

DENY = ["permissions", "deny"]


def add(text: str | None, value: str = "WebSearch", keys: list[str] = DENY) -> str:
    return ensure_in_array(None if text is None else text.encode(), keys, value).decode()


def test_new_file_in_claude_codes_own_style() -> None:
    assert add(None) == '{\n  "permissions": {\n    "deny": [\n      "WebSearch"\n    ]\n  }\n}\n'


def test_appends_to_a_multiline_array_with_its_indentation() -> None:
    before = '{\n    "permissions": {\n        "deny": [\n            "WebFetch"\n        ]\n    }\n}\n'
    assert add(before) == before.replace('"WebFetch"\n', '"WebFetch",\n            "WebSearch"\n')


def test_appends_to_a_one_line_array_on_one_line() -> None:
    assert add('{"permissions":{"deny":["A"]}}') == '{"permissions":{"deny":["A", "WebSearch"]}}'


def test_adds_a_missing_member_after_the_last_one_with_tabs_and_crlf() -> None:
    before = '{\r\n\t"permissions": {\r\n\t\t"allow": ["Bash(ls:*)"]\r\n\t}\r\n}'
    after = add(before)
    assert after == (
        '{\r\n\t"permissions": {\r\n\t\t"allow": ["Bash(ls:*)"],\r\n\t\t"deny": [\r\n\t\t\t"WebSearch"'
        "\r\n\t\t]\r\n\t}\r\n}"
    )


def test_creates_nested_objects_at_the_end_and_keeps_order_and_escapes() -> None:
    before = '{\n  "z\\"key": "caf\\u00e9",\n  "a": [1, 2.5e3, null, true]\n}\n'
    after = add(before, "docs", ["disabledMcpjsonServers"])
    assert after.startswith(before.rstrip("\n}").rstrip())
    assert json.loads(after) == {
        'z"key': "café",
        "a": [1, 2500.0, None, True],
        "disabledMcpjsonServers": ["docs"],
    }


def test_present_value_changes_nothing() -> None:
    before = '{"permissions": {"deny": ["WebSearch"]}}'
    assert add(before) == before


@pytest.mark.parametrize(
    "text, message",
    [
        ("[1]", "not a JSON object"),
        ('{"permissions": []}', "'permissions' is not an object"),
        ('{"permissions": {"deny": "WebSearch"}}', "'permissions.deny' is not a list"),
        ('{"permissions": ', "not valid JSON"),
        ("// comment\n{}", "not valid JSON"),
    ],
)
def test_refuses_what_it_cannot_edit_safely(text: str, message: str) -> None:
    with pytest.raises(PilotError, match=message):
        add(text)
