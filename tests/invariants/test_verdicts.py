"""Graded survival verdicts (issue 17 item 3): kept, altered, lost, each with why."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxward.core.fingerprint import fingerprint, of_rules, short
from ctxward.invariants.model import RuleRef
from ctxward.invariants.summary import check_survival
from ctxward.invariants.verdicts import ALTERED, KEPT, LOST, grade, words_of

RULE = "Keep every function under 50 lines."


def verdict(summary: str, rule: str = RULE) -> tuple[str, str]:
    (graded,) = grade([RuleRef("p", "s", rule)], summary)
    return graded.verdict, graded.why


@pytest.mark.parametrize(
    "summary",
    [
        f"<summary>- {RULE}</summary>",
        "<summary>- keep EVERY function under 50 lines</summary>",
        "<summary>-   Keep every\n  function under 50 lines!</summary>",
        "<summary>Active invariants: keep every function, under 50 lines.</summary>",
        "<summary>- Keep every function under 50 lines (skill deep-review).</summary>",
        "<analysis>x</analysis><summary>The agents keep every function under 50 lines.</summary>",
    ],
)
def test_noise_only_is_kept(summary):
    assert verdict(summary)[0] == KEPT


def test_kept_says_whether_it_was_verbatim():
    assert verdict(f"<summary>{RULE}</summary>") == (KEPT, "verbatim")
    assert verdict("<summary>keep every function under 50 lines</summary>") == (
        KEPT,
        "differs in case, spacing or punctuation",
    )


@pytest.mark.parametrize(
    ("summary", "why"),
    [
        ("- Keep every function under 50 lines, unless the reviewer waives it.", "unless"),
        ("- Keep every function under 50 lines where practical.", "where practical"),
        ("- Keep every function under 50 lines (optional for tests).", "optional"),
    ],
)
def test_a_qualifier_appended_is_altered(summary, why):
    graded, reason = verdict(f"<summary>{summary}</summary>")
    assert graded == ALTERED
    assert why in reason


@pytest.mark.parametrize(
    "summary",
    [
        "It is no longer true that keep every function under 50 lines.",
        "The rule 'Keep every function under 50 lines.' was revoked.",
        "Do not keep every function under 50 lines.",
        "Revoked: keep every function under 50 lines.",
        "Keep every function under 50 lines. That rule is obsolete now.",
    ],
)
def test_a_negation_or_revocation_near_the_quote_is_altered(summary):
    assert verdict(f"<summary>{summary}</summary>")[0] == ALTERED


@pytest.mark.parametrize(
    ("summary", "change"),
    [
        ("- Keep every function under 80 lines.", "'50' became '80'"),
        ("- Keep every method under 50 lines.", "'function' became 'method'"),
        ("- Keep every function under 50 lines or so, mostly.", None),
    ],
)
def test_a_changed_number_or_identifier_is_altered(summary, change):
    graded, why = verdict(f"<summary>{summary}</summary>")
    assert graded == ALTERED
    if change:
        assert change in why


@pytest.mark.parametrize(
    "summary",
    [
        f"<analysis>{RULE}</analysis>\n<summary>Other things.</summary>",
        f"<summary>Other things.</summary><analysis>{RULE}</analysis>",
    ],
)
def test_a_rule_only_in_the_analysis_is_lost_and_says_so(summary):
    graded, why = verdict(summary)
    assert graded == LOST
    assert "only inside <analysis>" in why


def test_an_absent_rule_is_lost():
    assert verdict("<summary>We talked about the database.</summary>") == (
        LOST,
        "not in the summary",
    )


def test_a_list_of_rules_in_one_sentence_keeps_each():
    rules = [RuleRef("p", "s", "never push to main"), RuleRef("p", "s", "run the suite")]
    survived, missing = check_survival(rules, "<summary>Never push to main and run the suite.")
    assert (survived, missing) == (rules, [])


# --- false-certify: no weakened, mutated, contradicted or dropped rule is kept ------------------

RULES = [
    "Never push to main.",
    "Run the full test suite before the verdict.",
    "Cite file:line for every finding.",
    "Keep every function under 50 lines.",
]
DAMAGE = [
    lambda r: r.rstrip(".") + " unless the reviewer waives it.",
    lambda r: r.rstrip(".") + " when time allows.",
    lambda r: f"It is no longer true that {r[0].lower()}{r[1:]}",
    lambda r: f"The rule '{r}' was revoked.",
    lambda r: f"Previously: {r}",
    lambda r: r.replace("50", "80").replace("full", "quick").replace("every", "some"),
    lambda r: r.replace("Never", "Always").replace("Run", "Skip").replace("Cite", "Omit"),
    lambda r: r.replace("Keep", "Do not keep").replace("Cite", "Do not cite"),
    lambda r: "",
]


@pytest.mark.parametrize("damage", range(len(DAMAGE)))
def test_no_damaged_rule_is_ever_certified(damage):
    refs = [RuleRef("p", "s", rule) for rule in RULES]
    summary = "<summary>Active invariants:\n" + "\n".join(
        f"- {DAMAGE[damage](rule)}" for rule in RULES
    )
    damaged = [graded for graded in grade(refs, summary + "\n</summary>")]
    for graded in damaged:
        if DAMAGE[damage](graded.ref.rule) != graded.ref.rule:
            assert graded.verdict != KEPT, (graded.ref.rule, graded.why, summary)
    assert any(DAMAGE[damage](rule) != rule for rule in RULES)


WORD = st.text(alphabet="abcdefghij0123", min_size=1, max_size=4)
SEPARATOR = st.sampled_from([" ", "  ", "\n", ", ", ". ", " (", ") ", ": ", "'"])


@pytest.mark.slow  # a heavy variant: the slow stage (CI) runs it
@settings(max_examples=300, deadline=None)
@given(
    rule=st.lists(WORD, min_size=1, max_size=6).map(" ".join),
    summary=st.lists(st.tuples(WORD, SEPARATOR), max_size=30),
    drop=st.integers(min_value=0),
)
def test_a_summary_lacking_a_word_of_the_rule_never_keeps_it(rule, summary, drop):
    """The property the issue asks for: kept needs every word of the rule in the summary."""
    words = words_of(rule)
    missing = words[drop % len(words)]
    text = "".join(w + sep for w, sep in summary if missing not in words_of(w))
    assert missing not in words_of(text)
    assert verdict(f"<summary>{text}</summary>", rule)[0] != KEPT


# --- fingerprints (issue 21) --------------------------------------------------------------------


def test_a_fingerprint_ignores_case_spacing_and_punctuation_only():
    same = [
        "Never push to main.",
        "never  push to MAIN",
        "Never push-to main!",
        "never\tpush to main",
    ]
    assert len({fingerprint(rule) for rule in same}) == 1
    assert fingerprint("Never push to main") != fingerprint("Never push to mainline")
    assert fingerprint("x < 5") != fingerprint("x > 5")  # symbols carry meaning: kept
    assert len(short(fingerprint("a"))) == 12


def test_a_plan_fingerprint_is_its_set_of_rules():
    assert of_rules(["a.", "B"]) == of_rules(["b", "A", "a"])
    assert of_rules(["a", "b"]) != of_rules(["a", "c"])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
def test_the_ascii_fast_path_normalises_as_the_general_one(text):
    import unicodedata

    from ctxward.core.fingerprint import normalise

    general = "".join(
        char
        for char in unicodedata.normalize("NFKC", text).casefold()
        if not char.isspace() and unicodedata.category(char)[0] not in "PZC"
    )
    assert normalise(text) == general
