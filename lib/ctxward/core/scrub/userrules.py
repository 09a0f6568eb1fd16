"""The `scrub:` section of `.ctxward/config.yaml`: an allowlist and extra rules for `scrub()`.

    scrub:
      allow:                       # exact values never redacted (a test fixture, a public id)
        - pk_test_0123456789abcdef
      rules:                       # extra secrets the built-in table does not know
        - id: acme_token
          pattern: 'acme_[A-Za-z0-9]{32}'
          type: token              # optional: the [REDACTED:<type>] it gets (default: the id)

The config is repository content, so a clone the user did not write can set it. Both halves are
built so that it gains nothing by it:

- `allow` holds exact values only (no patterns, at least 8 characters): a repository can only
  let through a value its author already knows; it cannot open a class of secrets.
- A rule's pattern must be safe for a backtracking engine on any input, or it is refused with
  one line naming it: it starts with a literal of at least 3 characters (the keyword
  prefilter: the rule runs only where that literal occurs, and the regex engine skips to it),
  it has no backreference, lookaround or conditional, no repeat inside a repeat and no
  alternation under a repeat, every repeat is bounded (at most 256, and 64 for the one repeat
  allowed to vary in length). So each try costs at most a few hundred steps, and a hook's budget
  (`limits.py`) holds: tests/core/scrub/test_userrules.py feeds each accepted shape 1 MB of its own
  keyword and bounds the time as a ratio.

Standard library only (the hooks load the config).
"""

from __future__ import annotations

import re
from typing import Any

from ctxward.errors import BadInput

MAX_RULES = 32
MAX_ALLOW = 256
MAX_PATTERN = 256
MIN_KEYWORD = 3
MAX_FIXED_REPEAT = 256
MAX_VARIABLE_REPEAT = 64
_ID = r"[a-z][a-z0-9_]{1,40}"


def unsafe(pattern: str) -> str | None:
    """Why `pattern` is refused as a user rule, or None when it is safe."""
    if len(pattern) > MAX_PATTERN:
        return f"longer than {MAX_PATTERN} characters"
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return f"not a valid regular expression ({exc})"
    if compiled.flags & ~(re.UNICODE):
        return "inline flags are not allowed"
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    parsed = list(_parser.parse(pattern))
    keyword = ""
    for op, arg in parsed:
        if op is not c.LITERAL:
            break
        keyword += chr(arg)
    if len(keyword) < MIN_KEYWORD:
        return f"must start with a literal keyword of at least {MIN_KEYWORD} characters"
    variable = 0

    def walk(items: list[tuple[Any, Any]], under_repeat: bool) -> str | None:
        nonlocal variable
        for op, arg in items:
            if op in (c.GROUPREF, c.GROUPREF_EXISTS, c.ASSERT, c.ASSERT_NOT, c.ATOMIC_GROUP):
                return "backreferences, lookarounds and conditionals are not allowed"
            if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
                low, high, body = arg
                if under_repeat:
                    return "a repeat inside a repeat is not allowed"
                if high is c.MAXREPEAT or high > MAX_FIXED_REPEAT:
                    return f"every repeat needs a bound of at most {MAX_FIXED_REPEAT} (no * or +)"
                if low != high:
                    variable += 1
                    if variable > 1:
                        return "at most one repeat may vary in length"
                    if high > MAX_VARIABLE_REPEAT:
                        return f"a repeat that varies in length is bounded by {MAX_VARIABLE_REPEAT}"
                problem = walk(list(body), True)
                if problem:
                    return problem
            elif op is c.BRANCH:
                if under_repeat:
                    return "an alternation under a repeat is not allowed"
                for branch in arg[1]:
                    problem = walk(list(branch), under_repeat)
                    if problem:
                        return problem
            elif op is c.SUBPATTERN:
                problem = walk(list(arg[-1]), under_repeat)
                if problem:
                    return problem
        return None

    return walk(parsed, False)


def keyword_of(pattern: str) -> str:
    """The literal a safe pattern starts with (its prefilter)."""
    from re import _constants as c  # type: ignore[attr-defined]
    from re import _parser  # type: ignore[attr-defined]

    keyword = ""
    for op, arg in _parser.parse(pattern):
        if op is not c.LITERAL:
            break
        keyword += chr(arg)
    return keyword


def parse(value: object, where: str) -> tuple[frozenset[str], tuple[tuple[str, str, str], ...]]:
    """The allowlist and the rules `(id, type, pattern)`; BadInput names the first bad entry."""
    if value is None:
        return frozenset(), ()
    if not isinstance(value, dict):
        raise BadInput(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - {"allow", "rules"})
    if unknown:
        raise BadInput(f"{where}: unknown key {unknown[0]!r} (known: allow, rules)")
    allow = value.get("allow") or []
    if not isinstance(allow, list) or len(allow) > MAX_ALLOW:
        raise BadInput(f"{where}.allow: expected a list of at most {MAX_ALLOW} exact values")
    for item in allow:
        if not isinstance(item, str) or len(item) < 8:
            raise BadInput(f"{where}.allow: {item!r}: an exact value of at least 8 characters")
    rules = value.get("rules") or []
    if not isinstance(rules, list) or len(rules) > MAX_RULES:
        raise BadInput(f"{where}.rules: expected a list of at most {MAX_RULES} rules")
    parsed: list[tuple[str, str, str]] = []
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict) or set(rule) - {"id", "pattern", "type"}:
            raise BadInput(f"{where}.rules[{index}]: expected id, pattern and optional type")
        rule_id, pattern, kind = rule.get("id"), rule.get("pattern"), rule.get("type")
        if not isinstance(rule_id, str) or not re.fullmatch(_ID, rule_id):
            raise BadInput(f"{where}.rules[{index}]: id {rule_id!r}: lower-case letters, digits, _")
        kind = rule_id if kind is None else kind
        if not isinstance(kind, str) or not re.fullmatch(_ID, kind):
            raise BadInput(f"{where}.rules[{index}] {rule_id}: type {kind!r}: letters, digits, _")
        if not isinstance(pattern, str):
            raise BadInput(f"{where}.rules[{index}] {rule_id}: pattern must be a string")
        problem = unsafe(pattern)
        if problem:
            raise BadInput(f"{where}.rules[{index}] {rule_id}: pattern refused: {problem}")
        parsed.append((rule_id, kind, pattern))
    return frozenset(allow), tuple(parsed)


def apply(value: object, where: str) -> None:
    """Validate the section (see `parse`) and put it in force for this process's `scrub()`."""
    from ctxward.core import scrub

    allow, rules = parse(value, where)
    scrub.configure(allow=allow, rules=rules)
