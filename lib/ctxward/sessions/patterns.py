"""The seed's categories, their token limits, and the patterns that classify a sentence."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ctxward.core.project import Project
from ctxward.core.sessionfiles import SESSIONS_DIRNAME

TOKEN_BUDGET = 200  # seed 001: never more, at any length


# Seed 001 "Compression Ratio Targets": (session tokens, compressed tokens). Between two rows the
# budget is interpolated; below the first it stays at the first (a summary's fixed fields need
# ~35 tokens), above the last at TOKEN_BUDGET.
RATIO_TARGETS = ((2_000, 100), (5_000, 150), (10_000, 200))


CRITICAL = ("decisions", "errors_and_fixes", "action_items")


# (category, priority, max tokens): the seed's table, highest priority first.
CATEGORIES = (
    ("decisions", "critical", 50),
    ("errors_and_fixes", "critical", 50),
    ("action_items", "high", 30),
    ("preferences", "high", 20),
    ("level", "high", 10),
    ("architecture", "medium", 20),
    ("skill_updates", "medium", 10),
    ("patterns", "low", 10),
)


MAX_TOKENS = {name: tokens for name, _, tokens in CATEGORIES}


ITEM_CHARS = 110  # one kept sentence, at most (cut at a clause, else a word, with "…")


ERROR_CHARS, CAUSE_CHARS, FIX_CHARS = 64, 48, 48  # the parts of "error; cause: … → fix"


CAUSE = "; cause: "


FIX_MARK = " → "


FIX_WINDOW = 4  # a fix joins an unfixed error said at most this many messages earlier


STACK_SIZE = 5


COMMON_WORD = 48  # a word in more items than this is not used to find duplicates


DONE = " (done)"


def budget_for(token_count: int) -> int:
    """The compressed size a session of `token_count` tokens may have (seed 001's ratio table)."""
    (low_tokens, low_budget), *rest = RATIO_TARGETS
    if token_count <= low_tokens:
        return low_budget
    for high_tokens, high_budget in rest:
        if token_count <= high_tokens:
            share = (token_count - low_tokens) / (high_tokens - low_tokens)
            return int(low_budget + share * (high_budget - low_budget))
        low_tokens, low_budget = high_tokens, high_budget
    return TOKEN_BUDGET


def sessions_dir(project: Project) -> Path:
    return project.state_dir / SESSIONS_DIRNAME


_I = re.IGNORECASE


ACTION = re.compile(
    r"\b(?:todo|to-do|fixme|next steps?\b|next up\b|next:|next (?:time|session|sprint)\b|"
    r"follow[- ]?ups?\b|action items?\b|still (?:have|need) to\b|have yet to\b|remaining:|"
    r"pending:|left to do\b|needs? to (?!(?:read|check|look|see|find|understand|run|inspect|"
    r"verify|examine|search|open|review|investigate|figure|know|ask)\b)|"
    r"we should (?:also )?(?:add|write|update|remove|fix|test|move|split|document|rename|"
    r"implement|check)\b|later we\b|open question)",
    _I,
)


ERROR = re.compile(
    r"\b(?:(?i:tracebacks?|bugs?|crash(?:es|ed)?|fail(?:s|ed|ing|ures?)?|broken|breaks|broke|"
    r"regressions?|hangs|times? out|timed out|leaks?|"
    r"segfault|panic(?:ked)?|n\+1|errors?(?! (?:handling|handlers?|messages?|codes?|pages?|"
    r"boundar\w*|reporting|logs?|types?)\b)|exceptions?(?! (?:handling|handlers?)\b)|"
    r"(?:the|an?|this|that) issue)|[A-Z][A-Za-z]*(?:Error|Exception))"
)


FIX = re.compile(
    r"\b(?:fixed|fix(?:ed)? (?:it |this |that )?by|the fix (?:is|was)|fixes|resolved|solved|"
    r"patched|workaround)\b",
    _I,
)


# What an error's cause is said with (seed 001: "Error + cause + fix").
CAUSE_WORDS = re.compile(
    r"\b(?:caused by|root cause|the cause|because|due to|comes from|turned out|happens when)\b", _I
)


CAUSE_LEAD = re.compile(
    r"^(?:(?:the )?(?:root )?cause (?:is|was)(?: that)?|(?:that|this|it) (?:happens|happened|"
    r"fails|failed|breaks|broke) because|because(?: of)?|caused by|due to|comes from|"
    r"(?:it )?turned out(?: that)?|happens when)\s*:?\s*",
    _I,
)


DANGLING = re.compile(r"(?:[\s,;:—-]+(?:the|a|an|and|but|which|this|that))*[\s,;:—-]*$", _I)


DECISION = re.compile(
    r"\b(?:decided|decide to|decision|chose|choose to|chosen|selected|opted|settled on|"
    r"let'?s (?:go with|use|stick with|keep|switch to)|let us (?:go with|use)|"
    r"we'?ll (?:use|go with|stick with|keep|switch to)|we will (?:use|go with|stick with)|"
    r"we'?re (?:going with|using|switching to)|going with|go with|switch(?:ing)? to|"
    r"instead of|rather than|prefer \S+ over|use \S+(?: \S+)? over|agreed)\b",
    _I,
)


REASON = re.compile(r"\b(?:because|since|so that|for|to avoid|due to)\b|\(|→|—", _I)


LEVEL = re.compile(
    r"\b(?:i'?m|i am)\s+(?:(?:a|an|still|quite|pretty|very|fairly|relatively|completely|"
    r"totally|really)\s+)*(new to|beginner|novice|junior|learning|intermediate|mid-level|"
    r"senior|expert|experienced|advanced|familiar with|comfortable with)\b|"
    r"\b(first time (?:using|with|writing))\b|"
    r"\b(?:i'?ve|i have) been (?:using|writing|coding in|working with) \S+(?: \S+)? for "
    r"(years|\d+ years)\b",
    _I,
)


LEVELS = {
    "new to": "beginner",
    "beginner": "beginner",
    "novice": "beginner",
    "junior": "beginner",
    "learning": "beginner",
    "intermediate": "intermediate",
    "mid-level": "intermediate",
    "familiar with": "intermediate",
    "comfortable with": "intermediate",
    "senior": "advanced",
    "expert": "advanced",
    "experienced": "advanced",
    "advanced": "advanced",
}


PREFERENCE = re.compile(
    r"\b(?:i (?:prefer|'d prefer|would prefer|'d rather|would rather)|i'd like (?:you )?to|"
    r"please (?:always|never|keep|avoid|use|don'?t|do not|stop|respond|answer|reply|explain|"
    r"write|show|give)|(?:always|never) (?:use|write|add|run|commit|push|ask|explain|show|give)|"
    r"keep (?:it|answers|responses|replies|explanations|things) (?:short|concise|brief|terse|"
    r"simple|detailed)|be (?:more )?(?:concise|brief|terse)|examples? first|"
    r"no (?:emojis|comments|explanations))",
    _I,
)


_ARCHITECTURE_STYLE = re.compile(
    r"\b(?:layered|monolith(?:ic)?|microservices?|hexagonal|ports and adapters|"
    r"clean architecture|mvc|mvvm|event[- ]driven|cqrs|serverless|client[- ]server|"
    r"repository pattern|service layer|plugin architecture)\b",
    _I,
)


ARCHITECTURE = re.compile(rf"{_ARCHITECTURE_STYLE.pattern}|\barchitecture\b", _I)


SKILL = re.compile(r"\bskills?\b", _I)


SKILL_CHANGE = re.compile(
    r"\b(?:updated|added|created|changed|improved|learned|activated|edited|new|renamed)\b", _I
)


PATTERN = re.compile(
    r"\b(?:patterns?|conventions?|recurring|keeps? (?:failing|happening|breaking|coming up)|"
    r"every time|each time|again and again|consistently|as usual|tends? to)\b",
    _I,
)


COMPLETED = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)?\s+)?(?:now\s+|just\s+)?(?:added|implemented|finished|"
    r"completed|wrote|written|created|fixed|shipped|merged|deployed|set up|done with|done:)\b|"
    r"\b(?:is|are|'s) (?:now )?(?:done|complete|completed|finished|in place|implemented)\b",
    _I,
)


# Technology names for the architecture's stack: matched case-sensitively (React, not "react").
STACK = re.compile(
    r"(?<![\w.-])(Python|Django|Flask|FastAPI|Node\.js|TypeScript|JavaScript|React|Vue|Svelte|"
    r"Angular|Next\.js|Tailwind|Laravel|PHP|Ruby on Rails|Rails|Golang|Rust|Java|Kotlin|"
    r"Swift|PostgreSQL|Postgres|MySQL|MariaDB|SQLite|MongoDB|Redis|Kafka|RabbitMQ|"
    r"Elasticsearch|Docker|Kubernetes|Terraform|AWS|GCP|Azure|GraphQL|gRPC|Celery|SQLAlchemy|"
    r"Pydantic|pytest|Jinja2|Nginx|Express|Spring Boot|\.NET|Bun|Deno)"
    r"(?: ?v?(\d+(?:\.\d+)*))?(?![\w-])"
)


STACK_ALIASES = {"Postgres": "PostgreSQL"}


_TRIGGER_WORDS = (
    "decided decide decision chose choose chosen selected opted settled let lets us we'll we "
    "will use using go going with stick keep switch switching instead rather prefer over agreed "
    "todo fixme next step steps up follow followup action item items need needs still have yet "
    "remaining pending left later should also fix fixed fixes fixing resolved solved patched "
    "workaround caused cause root because since error errors exception bug bugs issue issues "
    "fail fails failed failing failure the a an to of in on at for and or but is are was were "
    "be been it its this that these those i you he she they me my our your their so then than "
    "as by from into with without not no do does did done can could would should may might "
    "must just now very really okay ok yes yeah sure thanks thank please here there what "
    "which who how when where why all any some more most much many also too only about again "
    "add added adding make made get got run ran set sets ll re ve"
)


_STOP = frozenset(_TRIGGER_WORDS.split())


_WORD = re.compile(r"[a-z0-9][a-z0-9+#_.-]*[a-z0-9+#]|[a-z0-9]")


FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|alright|all right|right|great|perfect|cool|sure|yes|yeah|"
    r"thanks|thank you|hmm|now|also|and|but|anyway|i think|i guess|basically|actually|"
    r"honestly|got it|sounds good|good)\b[,:;!.]*\s*)+",
    _I,
)


_LABEL = re.compile(
    r"^(?:todo|to-do|fixme|next steps?|next up|next|follow[- ]?up|action items?|decision|"
    r"decided|error|bug|fix|fixed|note|pending|remaining|open question)\s*[:\-–—]\s*",
    _I,
)


# Lead-ins that say which category a sentence is in, and nothing else, once it is in it.
DECISION_LEAD = re.compile(
    r"^(?:(?:let'?s|let us) (?:go with|stick with|switch to)|(?:we|i)(?:'ve| have)? decided "
    r"(?:to|on|that)|decided (?:to|on|that)|(?:we|i)(?:'ll| will) (?:go with|stick with)|"
    r"(?:we|i) chose(?: to)?|(?:we|i)(?:'re| are) going with|going with)\s+",
    _I,
)


_USE_LEAD = re.compile(r"^(?:let'?s|let us|we'?ll|we will|we(?:'re| are) going to) use\s+", _I)


ACTION_LEAD = re.compile(
    r"^(?:(?:we|i|you) (?:still |also )?(?:need|have) to|(?:we|i) should(?: also)?|"
    r"(?:we|i) still have to)\s+",
    _I,
)


FIX_LEAD = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)?\s+)?(?:fixed (?:it|this|that|the \S+)? ?by|the fix (?:is|was)"
    r"(?: to)?|fixed:|fix:|resolved (?:it )?by|solved (?:it )?by)\s*",
    _I,
)


_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[\"'(`\[A-Z0-9])")


_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\[[ xX]\])\s+")


REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)


_DIGIT = re.compile(r"\d")


_PARENTHETICAL = re.compile(r"\s*\([^()]{1,60}\)")


_MARKUP = re.compile(r"\*\*|__|`+|^#+\s*")


GREETING = re.compile(
    r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|welcome|thanks?|thank you|bye|"
    r"goodbye|cheers|you're welcome|no problem|happy to help|glad)\b",
    _I,
)


_CODE_LINE = re.compile(
    r"^(?:\s{4,}\S|\t|\$ |>>> |#!|(?:def|class|import|from \S+ import|return|const|let|var|"
    r"function|public|private|SELECT|INSERT|UPDATE) )|[;{}]\s*$"
)


# User records that are not something the user typed.
_NOT_TYPED = (
    "<local-command",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "<task-notification>",
    "Caveat: ",
    "[Request interrupted",
)


def content_words(text: str) -> frozenset[str]:
    """The content words of `text`: lower-cased, trigger and stop words removed, plural folded."""
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return frozenset(found)


def similar(a: frozenset[str], b: frozenset[str]) -> bool:
    """Whether two sentences say the same thing (one idea in other words).

    Most of the smaller one's words in the other, or most of both in common; never when a
    word with a digit (an id, a version, a count) is in one and not the other.
    """
    shared = len(a & b)
    if shared < 2 or _DIGIT.search(" ".join(a ^ b)):
        return False
    if shared / min(len(a), len(b)) >= 0.75:
        return True
    return shared / len(a | b) >= 0.6


def _cut(text: str, limit: int) -> str:
    """`text` within `limit` characters: at a clause boundary when one is near, else a word."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    for mark in (" — ", "; ", ", ", " (", " - "):
        at = head.rfind(mark)
        if at >= limit // 2:
            return head[:at].rstrip(" ,;(-—") + "…"
    at = head.rfind(" ")
    return (head[:at] if at >= limit // 2 else head).rstrip(" ,;:") + "…"


def condense(sentence: str, limit: int = ITEM_CHARS, lead: re.Pattern[str] | None = None) -> str:
    """A sentence as a summary item: no filler, label, lead-in or markup; capitalised; within
    `limit`."""
    text = " ".join(_MARKUP.sub("", sentence).split())
    for _ in range(2):
        text = _LABEL.sub("", FILLER.sub("", text))
    if lead is DECISION_LEAD:
        text = _USE_LEAD.sub("Use ", text)
    if lead is not None:
        text = lead.sub("", text)
    text = text.strip().rstrip(".!;:,").strip()
    if text[:1].islower():
        text = text[0].upper() + text[1:]
    return _cut(text, limit)


def lower_first(text: str) -> str:
    """`text` with its first letter lower-cased, unless it starts a name (URL, PostgreSQL)."""
    if text[:1].isupper() and not text[1:2].isupper():
        return text[0].lower() + text[1:]
    return text


def architecture_pattern(sentence: str) -> str:
    """The architecture's pattern: its name, and the parenthesis that follows it, if any."""
    match = _ARCHITECTURE_STYLE.search(sentence) or ARCHITECTURE.search(sentence)
    if match is None:  # pragma: no cover - the caller matched it
        return ""
    end = match.end()
    if sentence[end:].lower().startswith(" architecture") and "architecture" not in match.group():
        end += len(" architecture")
    more = _PARENTHETICAL.match(sentence, end)
    if more:
        end = more.end()
    return condense(sentence[match.start() : end], 50)


def typed_text(text: str) -> str:
    return "" if text.lstrip().startswith(_NOT_TYPED) else text


def sentences(text: str) -> Iterator[str]:
    """The prose sentences of a message: reminders, fenced code and code-like lines dropped."""
    text = REMINDER.sub("\n", text)
    fence = ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if fence:
            if stripped.startswith(fence):
                fence = ""
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        if not stripped or stripped.startswith(("|", ">")) or _CODE_LINE.search(raw):
            continue
        line = _BULLET.sub("", raw).strip()
        for part in _SENTENCE_END.split(line):
            part = part.strip()
            if part:
                yield part
