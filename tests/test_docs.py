"""The docs stay true: the demo output they show is the real one, every command is in the
README, every page the README links to exists, and the configuration example is a valid config."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from ctxward.cli import cli

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
COMPACTION = REPO / "docs" / "compaction.md"  # the page that shows the demo's real output
STATE = REPO / "docs" / "state.md"  # the page with the configuration example
DEMO_BLOCK = re.compile(r"```text\n(ctxward demo:.*?)```", re.DOTALL)
# What legitimately differs between two demo runs: times, hashes, durations.
VOLATILE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\d{8}T\d{6}\d*Z"), "<stamp>"),
    (re.compile(r"[0-9a-f]{64}"), "<sha256>"),
    (re.compile(r"Done in \d+\.\d\d s"), "Done in <s> s"),
]


def normalise(text: str) -> str:
    for pattern, replacement in VOLATILE:
        text = pattern.sub(replacement, text)
    return text


def test_the_docs_show_the_real_demo_output(request: pytest.FixtureRequest) -> None:
    page = COMPACTION.read_text(encoding="utf-8")
    match = DEMO_BLOCK.search(page)
    assert match, "docs/compaction.md has no ```text block starting with the demo's first line"
    result = CliRunner().invoke(cli, ["demo"])
    assert result.exit_code == 0, result.output
    if request.config.getoption("--update-golden"):
        COMPACTION.write_text(page.replace(match.group(1), result.output), encoding="utf-8")
        return
    assert normalise(match.group(1)) == normalise(result.output), (
        "the demo output in docs/compaction.md is stale: "
        "pytest tests/test_docs.py --update-golden, then review"
    )


def test_every_page_the_docs_link_to_exists() -> None:
    for page in (README, *sorted((REPO / "docs").glob("*.md"))):
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.name} links to a missing {target}"


def _command_paths(group: click.Group, prefix: str = "ctxward") -> list[str]:
    paths = []
    context = click.Context(group)
    for name in group.list_commands(context):  # lazy commands too
        command = group.get_command(context, name)
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            paths.extend(_command_paths(command, path))
        else:
            paths.append(path)
    return paths


@pytest.mark.parametrize("command", _command_paths(cli))
def test_every_command_is_documented_in_the_readme(command: str) -> None:
    assert f"`{command}" in README.read_text(encoding="utf-8"), f"README does not show `{command}`"


def test_the_readme_shows_the_two_set_up_commands() -> None:
    readme = README.read_text(encoding="utf-8")
    assert "make demo" in readme
    assert "make test" in readme


def test_the_configuration_example_is_a_valid_config(tmp_path: Path) -> None:
    import yaml

    from ctxward.core.config import parse

    page = STATE.read_text(encoding="utf-8")
    section = page[page.index("## Configuration") :]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block, "no ```yaml block in docs/state.md's Configuration section"
    settings = parse(yaml.safe_load(block.group(1)), "docs/state.md")
    assert settings.dispatch.capacity_by_agent == {"Explore": 131072}
