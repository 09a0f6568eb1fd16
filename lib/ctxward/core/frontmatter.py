"""YAML front matter of skill files: `---` fenced mapping, then a Markdown body."""

from __future__ import annotations

from typing import Any

from ctxward.core.values import Value, field
from ctxward.errors import BadInput, digits_problem

_FENCE = "---"


class FrontmatterError(BadInput):
    """The file has no front matter, an unclosed fence, bad YAML, or a non-mapping head."""


class Document(Value):
    meta: dict[str, Any] = field(default_factory=dict)
    body: str = ""


def parse(text: str, *, source: str = "<text>") -> Document:
    """Split `text` into its front-matter mapping and body; errors name `source`."""
    import yaml  # only callers that read skills pay for it

    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != _FENCE:
        raise FrontmatterError(f"{source}: no YAML front matter (the file must start with '---')")
    for index, line in enumerate(lines[1:], start=1):
        if line.rstrip("\r\n") == _FENCE:
            head, body = "".join(lines[1:index]), "".join(lines[index + 1 :])
            break
    else:
        raise FrontmatterError(f"{source}: front matter is not closed (no second '---' line)")
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        meta = yaml.load(head, Loader=loader)  # a safe loader, always
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or type(exc).__name__
        raise FrontmatterError(f"{source}: YAML error in front matter{where}: {problem}") from None
    except ValueError:  # the only other error: an integer too long to convert
        raise FrontmatterError(f"{source}: front matter has {digits_problem()}") from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise FrontmatterError(f"{source}: front matter is a {type(meta).__name__}, not a mapping")
    return Document(meta=meta, body=body)


def dump(doc: Document) -> str:
    """Render `doc` back to text; `parse(dump(doc)) == doc` for plain YAML scalars.

    Known limit (found by the round-trip property test): PyYAML's emitter writes U+0085 (NEL)
    raw inside a quoted scalar, and its reader then folds it, as a line break, into a space; a key
    or string containing U+0085 does not round-trip. Skill files never need one.
    """
    import yaml

    head = yaml.safe_dump(doc.meta, sort_keys=False, allow_unicode=True, width=1_000_000)
    return f"{_FENCE}\n{head}{_FENCE}\n{doc.body}"
