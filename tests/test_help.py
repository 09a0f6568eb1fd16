"""`--help` speaks the user's words and shows an example; the glossary defines every spec code
the docs and the help use."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ctxward.cli import cli

REPO = Path(__file__).resolve().parent.parent
GLOSSARY = REPO / "docs" / "glossary.md"
# A spec code: G9, G8.6, C11, L1, RL-23, ACC, ZZ, "seed 000", or a section sign. Cross-reference
# ids (C0001) are not codes: C takes one or two digits.
CODE = re.compile(r"\b(?:G\d+(?:\.\d+)?|C\d{1,2}|L\d|RL-\d+|ACC|seed 00\d)\b|§")
EXAMPLE = re.compile(r"(?m)^\s+(?:\$ )?ctxward[ -]\S")


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [prefix]
    context = click.Context(group)
    for name in group.list_commands(context):  # lazy commands too
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            found.extend(_commands(command, (*prefix, name)))
        else:
            found.append((*prefix, name))
    return found


@pytest.mark.parametrize("path", _commands(cli), ids=lambda path: " ".join(path) or "ctxward")
def test_help_has_no_spec_code_and_shows_an_example(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*path, "--help"])

    assert result.exit_code == 0, result.output
    assert CODE.findall(result.output) == [], f"`{' '.join(path)} --help` cites a spec code"
    described = result.output.split("\nOptions:")[0]
    assert "Example" in described or EXAMPLE.search(described), "no example in --help"


def _codes(text: str) -> set[str]:
    return {"§N" if code == "§" else code for code in CODE.findall(text)} | (
        {"ZZ"} if re.search(r"\bZZ\b", text) else set()
    )


def test_the_glossary_defines_every_code_the_docs_use() -> None:
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    used = set().union(*(_codes(page.read_text(encoding="utf-8")) for page in pages))
    glossary = GLOSSARY.read_text(encoding="utf-8")

    assert used, "the pattern finds no code at all: it is broken"
    assert sorted(code for code in used if f"**{code}**" not in glossary) == []
