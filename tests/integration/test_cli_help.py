"""Every option and argument of ``svc`` and its subcommands says what it is in ``--help``."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from cli.main import _parser


def _parsers(
    parser: argparse.ArgumentParser, name: str = "svc"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def test_every_option_has_help() -> None:
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, parser in _parsers(_parser())
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction | argparse._SubParsersAction)
        if not action.help
    ]
    assert missing == []


def test_every_subcommand_has_help() -> None:
    missing = [
        f"{name} {choice.dest}"
        for name, parser in _parsers(_parser())
        for action in parser._actions
        if isinstance(action, argparse._SubParsersAction)
        for choice in action._choices_actions
        if not choice.help
    ]
    assert missing == []


def test_defaults_are_shown() -> None:
    """An option with a default names it in its help, so nobody has to read the code."""
    listen = dict(_parsers(_parser()))["svc listen"]
    text = listen.format_help()
    assert "9000" in text and "127.0.0.1" in text
