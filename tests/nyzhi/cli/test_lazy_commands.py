"""Only the given subcommand's module is imported, and parsing is the full parser's."""

from __future__ import annotations

import argparse

import pytest

from nyzhi.cli import main as cli


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def test_the_table_names_every_subcommand_and_alias_with_its_module() -> None:
    assert set(_choices(cli.build_parser())) == set(cli.COMMANDS)
    for name, module in cli.COMMANDS.items():
        assert name in _choices(cli.build_parser((module,)))


@pytest.mark.parametrize("argv", [
    ["run", "--ephemeral", "hi"],
    ["exec", "hi", "index", "config"],
    ["-y", "full", "run", "hi"],
    ["-s", "run", "run", "hi"],
    ["-s", "chat", "run", "hi"],
    ["-c", "run", "hi"],
    ["-s", "run"],
    ["--provider=x", "teams", "list"],
    ["session", "show", "abc"],
    ["whoami"],
    [],
    ["-p", "x"],
])
def test_the_lazy_parse_is_the_full_parse(argv: list[str]) -> None:
    assert cli.parse_args(argv) == cli.build_parser().parse_args(argv)


@pytest.mark.parametrize("argv", [
    ["run"], ["-h", "run"], ["--he", "run"], ["-ch", "run"], ["--help"], ["bogus"], [],
    ["-c", "--provider", "x"], ["-s", "run"],
])
def test_which_modules(argv: list[str]) -> None:
    # help: every module; no subcommand (the console, the line chat): none, and a wrong one is
    # parsed again by the full parser (test_usage_errors_are_the_full_parsers)
    expected = {
        "run": ("nyzhi.cli.cmd_run",), "bogus": (), "": (), "-c --provider x": (),
        "-s run": ("nyzhi.cli.cmd_run",),
    }
    assert cli._modules_for(argv) == expected.get(" ".join(argv))


@pytest.mark.parametrize("argv", [
    ["run", "--bogus", "hi"],
    ["-y", "yolo", "run", "hi"],
    ["-s", "x", "bogus"],
    ["run", "--sandbox", "nope", "hi"],
    ["team", "frobnicate"],
    ["bogus"],
    ["--provider", "x", "frobnicate", "hi"],
])
def test_usage_errors_are_the_full_parsers(argv: list[str], capsys) -> None:
    with pytest.raises(SystemExit) as lazy:
        cli.parse_args(argv)
    lazy_err = capsys.readouterr().err
    with pytest.raises(SystemExit) as full:
        cli.build_parser().parse_args(argv)
    assert lazy.value.code == full.value.code == 2
    assert lazy_err == capsys.readouterr().err
    assert "usage: nyz" in lazy_err


def test_help_of_a_subcommand_is_the_same(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.parse_args(["run", "--help"])
    lazy = capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "--help"])
    assert lazy == capsys.readouterr().out
