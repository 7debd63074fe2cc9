"""``nyzhi.jsonbound``: JSON from a model within bounds, every failure a ValueError."""

from __future__ import annotations

import json

import pytest

from nyzhi import jsonbound
from nyzhi.provider.arguments import ToolArgumentError, parse_tool_arguments


@pytest.mark.parametrize("text", ["[" * 200_000 + "]" * 200_000,
                                  '{"a":' * 100_000 + "1" + "}" * 100_000,
                                  "[" * 65 + "]" * 65,
                                  "[" * 300_000])  # deep and unterminated too
def test_too_deep_is_a_value_error(text: str) -> None:
    with pytest.raises(jsonbound.JsonTooDeep, match="nested deeper than 64 levels"):
        jsonbound.loads(text)


def test_at_the_bound_and_brackets_in_strings_parse() -> None:
    assert jsonbound.loads("[" * 64 + "]" * 64) is not None
    text = json.dumps({"code": "[" * 10_000 + "{" * 10_000})  # brackets inside a string
    assert jsonbound.loads(text)["code"].startswith("[[[")
    assert jsonbound.depth('{"a": "[[[[", "b": [[1], {"c": "\\"]]]"}]}') == 3


@pytest.mark.parametrize("literal", ['"\\ud800"', '"a\\udfffb"', '["x", {"k\\udbff": 1}]'])
def test_lone_surrogates_replaced_or_refused(literal: str) -> None:
    value = jsonbound.loads(literal)
    assert "\ufffd" in json.dumps(value, ensure_ascii=False)
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # writable
    with pytest.raises(jsonbound.LoneSurrogate, match="lone surrogate"):
        jsonbound.loads(literal, surrogates="refuse")


def test_a_pair_is_not_lone() -> None:
    assert jsonbound.loads('"\\ud83d\\ude00"', surrogates="refuse") == "\U0001f600"


@pytest.mark.parametrize("raw", ['{"path": ' + "[" * 5_000 + "]" * 5_000 + "}",
                                 '{"path": "a\\ud800"}'])
def test_tool_arguments_give_a_tool_error(raw: str) -> None:
    result = parse_tool_arguments(raw)
    assert isinstance(result, ToolArgumentError)
    str(result).encode("utf-8")  # the message to the model is writable text


def test_tool_arguments_control() -> None:
    args = parse_tool_arguments('{"a": ' + "[" * 60 + "]" * 60 + ', "b": "\u00e9"}')
    assert isinstance(args, dict) and args["b"] == "\u00e9" and isinstance(args["a"], list)
