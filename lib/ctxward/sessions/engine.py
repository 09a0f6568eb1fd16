"""Session compression and recovery (seed 001): a transcript in, a ≤ 200-token summary out.

Extraction is deterministic (no model). It reads a Claude Code transcript with
`ctxward.transcript.reader.iter_records` (streaming) and looks only at what the user typed and what
the assistant wrote: tool output, injected reminders, slash-command records and the compaction
summaries are evidence, not content. Fenced code blocks and code-like lines are dropped (seed
001: code lives in project memory). Each remaining sentence is scrubbed of secrets, then
classified by the seed's patterns, extended to real phrasing:

| category | priority | max tokens | triggers (case-insensitive) |
|---|---|---|---|
| decisions | critical | 50 | decided, chose, selected, let's go with, we'll use, instead of, ... |
| errors_and_fixes | critical | 50 | error, exception, bug, fails, ...; a later "fixed by" joins |
| action_items | high | 30 | TODO, next step, follow-up, need to, ...; "(done)" once said so |
| user.preferences | high | 20 | (user only) I prefer, please always / never, keep it short, ... |
| user.level | high | 10 | (user only) I'm new to / a beginner / senior / an expert, ... |
| architecture | medium | 20 | layered, monolith, microservices, hexagonal, ...; the stack named |
| skill_updates | medium | 10 | the Skill tool's uses; "skill" with updated / added / created, ... |
| patterns | low | 10 | pattern, convention, recurring, every time, keeps failing, ... |

One idea said several ways is kept once (the phrasing that gives a reason, else the first).

The budget: the `session_summary` block, as written, stays ≤ 200 estimated tokens
(ceil(UTF-8 bytes / 4)). Each lower category is first held to its own maximum; then, while the
block is over budget, the seed's loop runs: patterns are dropped, then architecture and skill
updates are truncated one entry at a time, then user preferences and the user level. Decisions,
errors and action items are never dropped from the file: when they alone exceed the budget the
file keeps them all, and the injected recovery text shows what fits and says "N more in <path>".
Whatever the budget cuts is kept under `dropped:` in the same file.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxward.core.project import Project
from ctxward.core.sessionfiles import SESSIONS_DIRNAME, summary_path
from ctxward.core.values import Value
from ctxward.errors import BadInput

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


def estimate_tokens(text: str) -> int:
    """ceil(UTF-8 bytes / 4): the project's token estimate."""
    return math.ceil(len(text.encode("utf-8")) / 4)


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


# --- the patterns -----------------------------------------------------------------------------

_I = re.IGNORECASE
_ACTION = re.compile(
    r"\b(?:todo|to-do|fixme|next steps?\b|next up\b|next:|next (?:time|session|sprint)\b|"
    r"follow[- ]?ups?\b|action items?\b|still (?:have|need) to\b|have yet to\b|remaining:|"
    r"pending:|left to do\b|needs? to (?!(?:read|check|look|see|find|understand|run|inspect|"
    r"verify|examine|search|open|review|investigate|figure|know|ask)\b)|"
    r"we should (?:also )?(?:add|write|update|remove|fix|test|move|split|document|rename|"
    r"implement|check)\b|later we\b|open question)",
    _I,
)
_ERROR = re.compile(
    r"\b(?:(?i:tracebacks?|bugs?|crash(?:es|ed)?|fail(?:s|ed|ing|ures?)?|broken|breaks|broke|"
    r"regressions?|hangs|times? out|timed out|leaks?|"
    r"segfault|panic(?:ked)?|n\+1|errors?(?! (?:handling|handlers?|messages?|codes?|pages?|"
    r"boundar\w*|reporting|logs?|types?)\b)|exceptions?(?! (?:handling|handlers?)\b)|"
    r"(?:the|an?|this|that) issue)|[A-Z][A-Za-z]*(?:Error|Exception))"
)
_FIX = re.compile(
    r"\b(?:fixed|fix(?:ed)? (?:it |this |that )?by|the fix (?:is|was)|fixes|resolved|solved|"
    r"patched|workaround)\b",
    _I,
)
# What an error's cause is said with (seed 001: "Error + cause + fix").
_CAUSE = re.compile(
    r"\b(?:caused by|root cause|the cause|because|due to|comes from|turned out|happens when)\b", _I
)
_CAUSE_LEAD = re.compile(
    r"^(?:(?:the )?(?:root )?cause (?:is|was)(?: that)?|(?:that|this|it) (?:happens|happened|"
    r"fails|failed|breaks|broke) because|because(?: of)?|caused by|due to|comes from|"
    r"(?:it )?turned out(?: that)?|happens when)\s*:?\s*",
    _I,
)
_DANGLING = re.compile(r"(?:[\s,;:—-]+(?:the|a|an|and|but|which|this|that))*[\s,;:—-]*$", _I)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|chose|choose to|chosen|selected|opted|settled on|"
    r"let'?s (?:go with|use|stick with|keep|switch to)|let us (?:go with|use)|"
    r"we'?ll (?:use|go with|stick with|keep|switch to)|we will (?:use|go with|stick with)|"
    r"we'?re (?:going with|using|switching to)|going with|go with|switch(?:ing)? to|"
    r"instead of|rather than|prefer \S+ over|use \S+(?: \S+)? over|agreed)\b",
    _I,
)
_REASON = re.compile(r"\b(?:because|since|so that|for|to avoid|due to)\b|\(|→|—", _I)
_LEVEL = re.compile(
    r"\b(?:i'?m|i am)\s+(?:(?:a|an|still|quite|pretty|very|fairly|relatively|completely|"
    r"totally|really)\s+)*(new to|beginner|novice|junior|learning|intermediate|mid-level|"
    r"senior|expert|experienced|advanced|familiar with|comfortable with)\b|"
    r"\b(first time (?:using|with|writing))\b|"
    r"\b(?:i'?ve|i have) been (?:using|writing|coding in|working with) \S+(?: \S+)? for "
    r"(years|\d+ years)\b",
    _I,
)
_LEVELS = {
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
_PREFERENCE = re.compile(
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
_ARCHITECTURE = re.compile(rf"{_ARCHITECTURE_STYLE.pattern}|\barchitecture\b", _I)
_SKILL = re.compile(r"\bskills?\b", _I)
_SKILL_CHANGE = re.compile(
    r"\b(?:updated|added|created|changed|improved|learned|activated|edited|new|renamed)\b", _I
)
_PATTERN = re.compile(
    r"\b(?:patterns?|conventions?|recurring|keeps? (?:failing|happening|breaking|coming up)|"
    r"every time|each time|again and again|consistently|as usual|tends? to)\b",
    _I,
)
_COMPLETED = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)?\s+)?(?:now\s+|just\s+)?(?:added|implemented|finished|"
    r"completed|wrote|written|created|fixed|shipped|merged|deployed|set up|done with|done:)\b|"
    r"\b(?:is|are|'s) (?:now )?(?:done|complete|completed|finished|in place|implemented)\b",
    _I,
)
# Technology names for the architecture's stack: matched case-sensitively (React, not "react").
_STACK = re.compile(
    r"(?<![\w.-])(Python|Django|Flask|FastAPI|Node\.js|TypeScript|JavaScript|React|Vue|Svelte|"
    r"Angular|Next\.js|Tailwind|Laravel|PHP|Ruby on Rails|Rails|Golang|Rust|Java|Kotlin|"
    r"Swift|PostgreSQL|Postgres|MySQL|MariaDB|SQLite|MongoDB|Redis|Kafka|RabbitMQ|"
    r"Elasticsearch|Docker|Kubernetes|Terraform|AWS|GCP|Azure|GraphQL|gRPC|Celery|SQLAlchemy|"
    r"Pydantic|pytest|Jinja2|Nginx|Express|Spring Boot|\.NET|Bun|Deno)"
    r"(?: ?v?(\d+(?:\.\d+)*))?(?![\w-])"
)
_STACK_ALIASES = {"Postgres": "PostgreSQL"}

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
_FILLER = re.compile(
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
_DECISION_LEAD = re.compile(
    r"^(?:(?:let'?s|let us) (?:go with|stick with|switch to)|(?:we|i)(?:'ve| have)? decided "
    r"(?:to|on|that)|decided (?:to|on|that)|(?:we|i)(?:'ll| will) (?:go with|stick with)|"
    r"(?:we|i) chose(?: to)?|(?:we|i)(?:'re| are) going with|going with)\s+",
    _I,
)
_USE_LEAD = re.compile(r"^(?:let'?s|let us|we'?ll|we will|we(?:'re| are) going to) use\s+", _I)
_ACTION_LEAD = re.compile(
    r"^(?:(?:we|i|you) (?:still |also )?(?:need|have) to|(?:we|i) should(?: also)?|"
    r"(?:we|i) still have to)\s+",
    _I,
)
_FIX_LEAD = re.compile(
    r"^(?:(?:i|we)(?:'ve| have)?\s+)?(?:fixed (?:it|this|that|the \S+)? ?by|the fix (?:is|was)"
    r"(?: to)?|fixed:|fix:|resolved (?:it )?by|solved (?:it )?by)\s*",
    _I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[\"'(`\[A-Z0-9])")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|\[[ xX]\])\s+")
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
_DIGIT = re.compile(r"\d")
_PARENTHETICAL = re.compile(r"\s*\([^()]{1,60}\)")
_MARKUP = re.compile(r"\*\*|__|`+|^#+\s*")
_GREETING = re.compile(
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


def _words(text: str) -> frozenset[str]:
    """The content words of `text`: lower-cased, trigger and stop words removed, plural folded."""
    found = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOP or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return frozenset(found)


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
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


def _condense(sentence: str, limit: int = ITEM_CHARS, lead: re.Pattern[str] | None = None) -> str:
    """A sentence as a summary item: no filler, label, lead-in or markup; capitalised; within
    `limit`."""
    text = " ".join(_MARKUP.sub("", sentence).split())
    for _ in range(2):
        text = _LABEL.sub("", _FILLER.sub("", text))
    if lead is _DECISION_LEAD:
        text = _USE_LEAD.sub("Use ", text)
    if lead is not None:
        text = lead.sub("", text)
    text = text.strip().rstrip(".!;:,").strip()
    if text[:1].islower():
        text = text[0].upper() + text[1:]
    return _cut(text, limit)


def _lower(text: str) -> str:
    """`text` with its first letter lower-cased, unless it starts a name (URL, PostgreSQL)."""
    if text[:1].isupper() and not text[1:2].isupper():
        return text[0].lower() + text[1:]
    return text


def _architecture(sentence: str) -> str:
    """The architecture's pattern: its name, and the parenthesis that follows it, if any."""
    match = _ARCHITECTURE_STYLE.search(sentence) or _ARCHITECTURE.search(sentence)
    if match is None:  # pragma: no cover - the caller matched it
        return ""
    end = match.end()
    if sentence[end:].lower().startswith(" architecture") and "architecture" not in match.group():
        end += len(" architecture")
    more = _PARENTHETICAL.match(sentence, end)
    if more:
        end = more.end()
    return _condense(sentence[match.start() : end], 50)


def _typed_text(text: str) -> str:
    return "" if text.lstrip().startswith(_NOT_TYPED) else text


def sentences(text: str) -> Iterator[str]:
    """The prose sentences of a message: reminders, fenced code and code-like lines dropped."""
    text = _REMINDER.sub("\n", text)
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


# --- extraction -------------------------------------------------------------------------------


class _Item:
    """One idea of a category, updated as it is said again (compared by identity)."""

    __slots__ = ("caused", "done", "fixed", "message", "position", "reasoned", "text", "words")

    def __init__(
        self,
        text: str,
        words: frozenset[str],
        message: int,
        position: int,
        reasoned: bool = False,
        fixed: bool = False,
        done: bool = False,
    ) -> None:
        self.text = text
        self.words = words
        self.message = message  # the message it was (last) said in
        self.position = position  # in its category's items
        self.reasoned = reasoned
        self.fixed = fixed
        self.done = done
        self.caused = False  # an error whose cause is in its text


class _Category:
    """The items of one category, deduplicated as they arrive."""

    __slots__ = ("by_word", "items")

    def __init__(self) -> None:
        self.items: list[_Item] = []
        self.by_word: dict[str, set[int]] = {}  # word -> positions in items

    def add(self, text: str, message: int, source: str) -> _Item | None:
        words = _words(source)
        if len(words) < 2 or not text:
            return None
        reasoned = bool(_REASON.search(source))
        for item in self.sharing(words):
            if _similar(item.words, words):
                item.message = message
                if reasoned and not item.reasoned and not item.fixed:
                    item.text, item.reasoned = text, True
                    self.grow(item, words)
                return item
        item = _Item(text, frozenset(), message, len(self.items), reasoned)
        self.items.append(item)
        self.grow(item, words)
        return item

    def sharing(self, words: frozenset[str]) -> list[_Item]:
        """The items that share a distinctive word with `words`, oldest first.

        An index, not a scan: a word that dozens of items share ("test", "module") says little,
        so only words in at most COMMON_WORD items open their buckets; when every word is that
        common, the latest COMMON_WORD items of the rarest word are compared.
        """
        buckets = [self.by_word[word] for word in words if word in self.by_word]
        if not buckets:
            return []
        found: set[int] = set()
        for bucket in buckets:
            if len(bucket) <= COMMON_WORD:
                found.update(bucket)
        if not found:
            rarest = min(buckets, key=lambda bucket: len(bucket))
            found.update(sorted(rarest)[-COMMON_WORD:])
        return [self.items[position] for position in sorted(found)]

    def grow(self, item: _Item, words: frozenset[str]) -> None:
        """Add `words` to `item` and to the index."""
        for word in words - item.words:
            self.by_word.setdefault(word, set()).add(item.position)
        item.words = item.words | words

    def texts(self) -> list[str]:
        return [item.text + (DONE if item.done else "") for item in self.items]


class Extraction(Value):
    """Everything found in a transcript, before the budget."""

    __slots__ = (
        "action_items",
        "assistant_messages",
        "decisions",
        "ended",
        "errors_and_fixes",
        "level",
        "pattern",
        "patterns",
        "preferences",
        "redactions",
        "session_id",
        "skill_updates",
        "stack",
        "started",
        "token_count",
        "user_messages",
    )
    session_id: str
    started: str
    ended: str
    token_count: int
    user_messages: int
    assistant_messages: int
    decisions: tuple[str, ...]
    errors_and_fixes: tuple[str, ...]
    action_items: tuple[str, ...]
    level: str
    preferences: tuple[str, ...]
    pattern: str
    stack: tuple[str, ...]
    skill_updates: tuple[str, ...]
    patterns: tuple[str, ...]
    redactions: int

    def __init__(
        self,
        session_id: str,
        started: str,
        ended: str,
        token_count: int,
        user_messages: int,
        assistant_messages: int,
        decisions: tuple[str, ...],
        errors_and_fixes: tuple[str, ...],
        action_items: tuple[str, ...],
        level: str,
        preferences: tuple[str, ...],
        pattern: str,
        stack: tuple[str, ...],
        skill_updates: tuple[str, ...],
        patterns: tuple[str, ...],
        redactions: int,
    ) -> None:
        self._set(
            session_id=session_id,
            started=started,
            ended=ended,
            token_count=token_count,
            user_messages=user_messages,
            assistant_messages=assistant_messages,
            decisions=decisions,
            errors_and_fixes=errors_and_fixes,
            action_items=action_items,
            level=level,
            preferences=preferences,
            pattern=pattern,
            stack=stack,
            skill_updates=skill_updates,
            patterns=patterns,
            redactions=redactions,
        )

    @property
    def duration(self) -> str:
        return _duration(self.started, self.ended)


class _Extractor:
    def __init__(self) -> None:
        self.session_id = ""
        self.started = self.ended = ""
        self.content_bytes = 0
        self.scanned = 0  # characters of message text read (`_scanned`)
        self.messages = 0
        self.users = self.assistants = 0
        self.redactions = 0
        self.decisions = _Category()
        self.errors = _Category()
        self.actions = _Category()
        self.preferences = _Category()
        self.architecture = _Category()
        self.skills = _Category()
        self.patterns = _Category()
        self.levels: list[str] = []
        self.last_message = ""  # the id of the assistant message being read
        self.stack: Counter[str] = Counter()  # technology -> mentions
        self.stack_order: dict[str, int] = {}  # technology -> first mention
        self.versions: dict[str, str] = {}  # technology -> the first version named with it
        self.skill_uses: Counter[str] = Counter()

    def add(self, record: Any) -> None:
        message = record.message
        if message is None or record.is_sidechain or record.is_api_error:
            return
        if not self.session_id:
            self.session_id = record.session_id
        stamp = record.timestamp
        if stamp:
            self.started = min(self.started, stamp) if self.started else stamp
            self.ended = max(self.ended, stamp)
        if record.is_compact_summary:
            return
        self._count(message)
        role = message.role
        if role == "assistant":
            for use in message.tool_uses:
                if use.name == "Skill":
                    name = use.input.get("skill") or use.input.get("command")
                    if isinstance(name, str) and name.strip():
                        self.skill_uses[" ".join(name.split())[:40]] += 1
        if record.is_meta or role not in ("user", "assistant"):
            return
        text = _typed_text(message.text) if role == "user" else message.text
        if not _REMINDER.sub("", text).strip():
            return
        from ctxward.core.scrub import scrub

        text, redactions = scrub(self._scanned(text))
        self.redactions += len(redactions)
        ident = (message.id or record.request_id) if role == "assistant" else ""
        if not ident or ident != self.last_message:  # one response spans several lines
            self.messages += 1
            if role == "user":
                self.users += 1
            else:
                self.assistants += 1
        self.last_message = ident
        for sentence in sentences(text):
            self._sentence(sentence, role)

    def _scanned(self, text: str) -> str:
        """The whole lines of `text` within what a summary reads of one message and of the
        transcript (`ctxward.core.limits`): a hook summarizes within its time budget, and a pasted
        megabyte says no more than its first 64 KB."""
        from ctxward.core.limits import MAX_SCANNED_MESSAGE_CHARS, MAX_SCANNED_TRANSCRIPT_CHARS

        room = min(MAX_SCANNED_MESSAGE_CHARS, MAX_SCANNED_TRANSCRIPT_CHARS - self.scanned)
        if len(text) > room:
            text = text[: text.rfind("\n", 0, max(room, 0)) + 1]
        self.scanned += len(text)
        return text

    def _count(self, message: Any) -> None:
        size = len(message.text.encode("utf-8"))
        for use in message.tool_uses:
            size += len(json.dumps(use.input, ensure_ascii=False).encode("utf-8"))
        for result in message.tool_results:
            size += result.size
        self.content_bytes += size

    def _sentence(self, sentence: str, role: str) -> None:
        if sentence.endswith("?") or (_GREETING.match(sentence) and len(_words(sentence)) < 3):
            return
        n = self.messages
        for match in _STACK.finditer(sentence):
            name = _STACK_ALIASES.get(match.group(1), match.group(1))
            self.stack[name] += 1
            self.stack_order.setdefault(name, len(self.stack_order))
            if match.group(2):
                self.versions.setdefault(name, match.group(2))
        if _COMPLETED.search(sentence):
            self._complete(sentence)
        if role == "user" and _LEVEL.search(sentence):
            self._level(sentence)
        if _ACTION.search(sentence):
            self.actions.add(_condense(sentence, lead=_ACTION_LEAD), n, sentence)
        elif _ERROR.search(sentence) and not _FIX_LEAD.match(_FILLER.sub("", sentence)):
            self._error(sentence, n)
        elif _FIX.search(sentence):
            self._fix(sentence, n)
        elif (
            _CAUSE.search(sentence) and not _DECISION.search(sentence) and self._cause(sentence, n)
        ):
            pass
        elif _DECISION.search(sentence):
            self.decisions.add(_condense(sentence, lead=_DECISION_LEAD), n, sentence)
        elif role == "user" and (preference := _PREFERENCE.search(sentence)):
            said = sentence[preference.start() :]
            self.preferences.add(_condense(said, 60), n, said)
        elif _ARCHITECTURE.search(sentence):
            self.architecture.add(_architecture(sentence), n, sentence)
        elif _SKILL.search(sentence) and _SKILL_CHANGE.search(sentence):
            self.skills.add(_condense(sentence, 40), n, sentence)
        elif _PATTERN.search(sentence):
            self.patterns.add(_condense(sentence, 40), n, sentence)

    def _error(self, sentence: str, n: int) -> None:
        """A new error (or one said again); its cause and fix when the same sentence says them."""
        cause = _CAUSE.search(sentence)
        if cause is not None and cause.start() > 0:
            head = _DANGLING.sub("", sentence[: cause.start()])
            tail = _CAUSE_LEAD.sub("", sentence[cause.start() :])
            text = _condense(head, ERROR_CHARS) + CAUSE + _lower(_condense(tail, CAUSE_CHARS))
        else:
            text = _condense(sentence, ERROR_CHARS)
        item = self.errors.add(text, n, sentence)
        if item is None:
            return
        item.caused = item.caused or cause is not None
        if _FIX.search(sentence):
            item.fixed = True  # the error and its fix in one sentence

    def _recent_error(self, n: int, unless: str) -> _Item | None:
        """The latest error said at most FIX_WINDOW messages ago that lacks `unless`."""
        for item in reversed(self.errors.items):
            if n - item.message > FIX_WINDOW:
                return None
            if not getattr(item, unless):
                return item
        return None

    def _fix(self, sentence: str, n: int) -> None:
        """Join a fix to the latest unfixed error said shortly before, else keep it alone
        (marked fixed: a fix is never an open item)."""
        fix = _condense(_FIX_LEAD.sub("", _FILLER.sub("", sentence)), FIX_CHARS)
        item = self._recent_error(n, "fixed")
        if item is not None:
            item.text = f"{item.text}{FIX_MARK}{_lower(fix)}"
            self.errors.grow(item, _words(sentence))
            item.fixed = True
            return
        alone = self.errors.add(FIX_MARK.lstrip() + _condense(sentence), n, sentence)
        if alone is not None:
            alone.fixed = True

    def _cause(self, sentence: str, n: int) -> bool:
        """Join a cause to the latest error said shortly before that has none; False if none."""
        item = self._recent_error(n, "caused")
        if item is None:
            return False
        cause = _lower(_condense(_CAUSE_LEAD.sub("", _FILLER.sub("", sentence)), CAUSE_CHARS))
        error, mark, fix = item.text.partition(FIX_MARK)
        item.text = f"{error}{CAUSE}{cause}{mark}{fix}"
        self.errors.grow(item, _words(sentence))
        item.caused = True
        return True

    def _complete(self, sentence: str) -> None:
        """Mark an earlier open action done when this sentence says it was done."""
        words = _words(sentence)
        for item in self.actions.sharing(words):
            if item.done or item.message >= self.messages:
                continue
            if item.words and len(item.words & words) / len(item.words) >= 0.6:
                item.done = True

    def _level(self, sentence: str) -> None:
        match = _LEVEL.search(sentence)
        if match is None:  # pragma: no cover - the caller matched it
            return
        said = (match.group(1) or "").lower()
        if match.group(2):
            level = "beginner"
        elif match.group(3):
            level = "advanced"
        else:
            level = _LEVELS.get(said, "intermediate")
        if not self.levels or self.levels[-1] != level:
            self.levels.append(level)

    def finish(self, session_id: str, fallback: str) -> Extraction:
        ranked = sorted(self.stack, key=lambda name: (-self.stack[name], self.stack_order[name]))
        stack = [
            f"{name} {self.versions[name]}" if name in self.versions else name for name in ranked
        ]
        errors = tuple(item.text for item in self.errors.items)
        return Extraction(
            session_id=session_id or self.session_id or fallback,
            started=self.started,
            ended=self.ended,
            token_count=math.ceil(self.content_bytes / 4),
            user_messages=self.users,
            assistant_messages=self.assistants,
            decisions=tuple(self.decisions.texts()),
            errors_and_fixes=errors,
            action_items=tuple(self.actions.texts()),
            level=" → ".join(self.levels[-2:]),
            preferences=tuple(self.preferences.texts()),
            pattern=self.architecture.items[0].text if self.architecture.items else "",
            stack=tuple(stack[:STACK_SIZE]),
            skill_updates=tuple(
                [
                    f"{name}: used{f' ×{count}' if count > 1 else ''}"
                    for name, count in self.skill_uses.most_common()
                ]
                + self.skills.texts()
            ),
            patterns=tuple(self.patterns.texts()),
            redactions=self.redactions,
        )


def extract(path: Path, session_id: str = "") -> Extraction:
    """Read the transcript at `path` (streaming) and extract the seed's categories.

    OSError when it cannot be opened; BadInput when it holds no transcript record at all.
    """
    from ctxward.transcript.reader import ReadStats, iter_records

    stats = ReadStats()
    walker = _Extractor()
    for record in iter_records(path, types=("user", "assistant"), stats=stats):
        walker.add(record)
    if not stats.known and stats.lines:
        raise BadInput(f"{path}: not a Claude Code transcript (no user or assistant records)")
    return walker.finish(session_id, path.stem)


def _timestamp(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _duration(started: str, ended: str) -> str:
    first, last = _timestamp(started), _timestamp(ended)
    if first is None or last is None:
        return "unknown"
    minutes = int(max((last - first).total_seconds(), 0) // 60)
    if minutes < 1:
        return "< 1 min"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


# --- the budget -------------------------------------------------------------------------------


class Summary(Value):
    """The seed's summary after the budget; `dropped` keeps what the budget cut."""

    __slots__ = (
        "action_items",
        "compressed_tokens",
        "decisions",
        "dropped",
        "duration",
        "errors_and_fixes",
        "level",
        "overflow",
        "pattern",
        "patterns",
        "preferences",
        "session_id",
        "skill_updates",
        "stack",
        "token_count",
    )
    session_id: str
    duration: str
    token_count: int
    decisions: tuple[str, ...]
    errors_and_fixes: tuple[str, ...]
    action_items: tuple[str, ...]
    level: str
    preferences: tuple[str, ...]
    pattern: str
    stack: tuple[str, ...]
    skill_updates: tuple[str, ...]
    patterns: tuple[str, ...]
    compressed_tokens: int
    dropped: Mapping[str, tuple[str, ...]]
    overflow: Mapping[str, tuple[str, ...]]  # critical items kept in the file, not the block

    def __init__(
        self,
        session_id: str,
        duration: str,
        token_count: int,
        decisions: tuple[str, ...] = (),
        errors_and_fixes: tuple[str, ...] = (),
        action_items: tuple[str, ...] = (),
        level: str = "",
        preferences: tuple[str, ...] = (),
        pattern: str = "",
        stack: tuple[str, ...] = (),
        skill_updates: tuple[str, ...] = (),
        patterns: tuple[str, ...] = (),
        compressed_tokens: int = 0,
        dropped: Mapping[str, tuple[str, ...]] | None = None,
        overflow: Mapping[str, tuple[str, ...]] | None = None,
    ) -> None:
        self._set(
            session_id=session_id,
            duration=duration,
            token_count=token_count,
            decisions=decisions,
            errors_and_fixes=errors_and_fixes,
            action_items=action_items,
            level=level,
            preferences=preferences,
            pattern=pattern,
            stack=stack,
            skill_updates=skill_updates,
            patterns=patterns,
            compressed_tokens=compressed_tokens,
            dropped={} if dropped is None else dropped,
            overflow={} if overflow is None else overflow,
        )

    @property
    def tokens_saved(self) -> int:
        return max(self.token_count - self.compressed_tokens, 0)

    @property
    def ratio(self) -> float:
        return round(self.token_count / self.compressed_tokens, 1) if self.compressed_tokens else 0

    @property
    def architecture(self) -> tuple[str, ...]:
        """The architecture's entries in truncation order: the pattern, then the stack."""
        return ((self.pattern,) if self.pattern else ()) + self.stack

    def counts(self) -> dict[str, int]:
        return {
            "decisions": len(self.decisions),
            "errors_and_fixes": len(self.errors_and_fixes),
            "action_items": len(self.action_items),
            "preferences": len(self.preferences),
            "level": int(bool(self.level)),
            "architecture": len(self.architecture),
            "skill_updates": len(self.skill_updates),
            "patterns": len(self.patterns),
        }

    def is_empty(self) -> bool:
        return not any(self.counts().values()) and not self.held_over()

    @property
    def budget(self) -> int:
        return budget_for(self.token_count)

    def held_over(self) -> int:
        """How many decisions, errors and action items are in the file's `overflow:` only."""
        return sum(len(items) for items in self.overflow.values())

    def everything(self, name: str) -> tuple[str, ...]:
        """A critical category whole: the block's items, then the file's overflow."""
        items: tuple[str, ...] = getattr(self, name)
        return items + tuple(self.overflow.get(name, ()))


def _q(text: str) -> str:
    """`text` as a YAML double-quoted scalar (JSON's escapes, plus YAML's line breaks)."""
    quoted = json.dumps(text, ensure_ascii=False)
    if quoted.isprintable():
        return quoted
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in quoted)


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _model(summary: Summary) -> dict[str, Any]:
    """The template's view of a summary: every string already quoted for YAML."""
    return {
        "session_id": _q(summary.session_id),
        "duration": _q(summary.duration),
        "token_count": summary.token_count,
        "compressed_tokens": summary.compressed_tokens,
        "tokens_saved": summary.tokens_saved,
        "decisions": [_q(t) for t in summary.decisions],
        "errors_and_fixes": [_q(t) for t in summary.errors_and_fixes],
        "action_items": [_q(t) for t in summary.action_items],
        "level": _q(summary.level) if summary.level else "",
        "preferences": [_q(t) for t in summary.preferences],
        "pattern": _q(summary.pattern) if summary.pattern else "",
        "stack": _q(", ".join(summary.stack)) if summary.stack else "",
        "skill_updates": [_q(t) for t in summary.skill_updates],
        "patterns": [_q(t) for t in summary.patterns],
        "overflow": summary.held_over(),
    }


def render_block(summary: Summary) -> str:
    """The `session_summary:` block as written to disk."""
    from ctxward.core.render import render

    return render("session/summary_block.yaml.j2", s=_model(summary))


def _tokens(summary: Summary) -> int:
    return estimate_tokens(render_block(summary))


def _category_tokens(summary: Summary, name: str) -> int:
    """The estimated tokens of one lower category's content (the seed's "Max Tokens")."""
    if name == "architecture":
        items: tuple[str, ...] = (summary.pattern, ", ".join(summary.stack))
    elif name == "level":
        items = (summary.level,)
    else:
        items = getattr(summary, name)
    return estimate_tokens("".join(items))


class _Budget:
    """Applies the caps and the seed's truncation loop, remembering what it cut."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        self.dropped: dict[str, list[str]] = {}

    def _drop(self, name: str, items: Iterable[str]) -> None:
        kept = [item for item in items if item]
        if kept:
            self.dropped.setdefault(name, [])[:0] = kept

    def cut(self, name: str, *, whole: bool = False) -> bool:
        """Remove one entry of a lower category (its last), or all of it when `whole`.

        False when the category is already empty.
        """
        s = self.summary
        if name == "patterns" and s.patterns:
            cut = s.patterns if whole else s.patterns[-1:]
            self._drop(name, cut)
            self.summary = s.replace(patterns=s.patterns[: len(s.patterns) - len(cut)])
        elif name == "architecture" and s.stack:
            self._drop("architecture", ["stack: " + s.stack[-1]])
            self.summary = s.replace(stack=s.stack[:-1])
        elif name == "architecture" and s.pattern:
            self._drop("architecture", ["pattern: " + s.pattern])
            self.summary = s.replace(pattern="")
        elif name in ("skill_updates", "preferences") and getattr(s, name):
            items = getattr(s, name)
            self._drop(name, items[-1:])
            self.summary = s.replace(**{name: items[:-1]})
        elif name == "level" and s.level:
            self._drop(name, [s.level])
            self.summary = s.replace(level="")
        else:
            return False
        return True

    def over(self) -> bool:
        self.summary = _settle(self.summary)
        return self.summary.compressed_tokens > self.summary.budget

    def refill(self) -> None:
        """Bring back, category by category, the first held-over item while it fits: a long
        error moved out can leave room for a short action item."""
        moved = True
        while moved:
            moved = False
            for name in CRITICAL:
                held = self.summary.overflow.get(name, ())
                if not held:
                    continue
                overflow = {**self.summary.overflow, name: held[1:]}
                if not overflow[name]:
                    del overflow[name]
                back = getattr(self.summary, name) + held[:1]
                candidate = _settle(self.summary.replace(overflow=overflow, **{name: back}))
                if candidate.compressed_tokens <= candidate.budget:
                    self.summary, moved = candidate, True

    def hold_over(self) -> bool:
        """Move one critical item from the block to the file's overflow: the last of the
        category with the most items left (the lower priority on a tie), so each keeps its
        first items in the block. False when the block holds none."""
        s = self.summary
        left = [(len(getattr(s, name)), rank, name) for rank, name in enumerate(CRITICAL)]
        count, _, name = max(left)
        if not count:
            return False
        items: tuple[str, ...] = getattr(s, name)
        overflow = dict(s.overflow)
        overflow[name] = items[-1:] + tuple(overflow.get(name, ()))
        self.summary = _settle(s.replace(overflow=overflow, **{name: items[:-1]}))
        return True

    def apply(self) -> Summary:
        for name in ("patterns", "skill_updates", "architecture", "level", "preferences"):
            while _category_tokens(self.summary, name) > MAX_TOKENS[name] and self.cut(name):
                pass
        while self.over():  # seed 001: patterns, then architecture and skill updates by turns
            progressed = self.cut("patterns", whole=True)  # the seed empties the lowest
            if self.over():
                progressed = self.cut("architecture") or progressed
            if self.over():
                progressed = self.cut("skill_updates") or progressed
            if not progressed:
                break
        while self.over() and self.cut("preferences"):  # then the user's preferences
            pass
        while self.over() and self.hold_over():  # then critical items move to the file
            pass
        self.refill()
        while self.over() and self.cut("level"):  # the level (≤ 10 tokens) only if all else
            pass
        dropped = {name: tuple(items) for name, items in self.dropped.items()}
        return _settle(self.summary.replace(dropped=dropped))


def _settle(summary: Summary) -> Summary:
    """Fill in compressed_tokens, which counts itself (a fixed point after a step or two)."""
    for _ in range(4):
        tokens = _tokens(summary)
        if tokens == summary.compressed_tokens:
            break
        summary = summary.replace(compressed_tokens=tokens)
    return summary


def compress(extraction: Extraction) -> Summary:
    """The extraction within the seed's budget (decisions, errors and actions never cut)."""
    summary = Summary(
        session_id=extraction.session_id,
        duration=extraction.duration,
        token_count=extraction.token_count,
        decisions=extraction.decisions,
        errors_and_fixes=extraction.errors_and_fixes,
        action_items=extraction.action_items,
        level=extraction.level,
        preferences=extraction.preferences,
        pattern=extraction.pattern,
        stack=extraction.stack,
        skill_updates=extraction.skill_updates,
        patterns=extraction.patterns,
    )
    return _Budget(summary).apply()


# --- the YAML file ----------------------------------------------------------------------------


class Written(Value):
    __slots__ = ("changed", "path", "summary")
    path: Path
    summary: Summary
    changed: bool

    def __init__(self, path: Path, summary: Summary, changed: bool) -> None:
        self._set(path=path, summary=summary, changed=changed)


def render_file(summary: Summary, transcript: Path | None = None) -> str:
    """The whole `.ctxward/sessions/<id>.yaml`: the summary, its source, what the budget cut."""
    from ctxward.core.render import render
    from ctxward.core.scrub import scrub

    source = None
    if transcript is not None:
        source = {"transcript": _q(str(transcript))}
    dropped = {name: [_q(item) for item in items] for name, items in summary.dropped.items()}
    overflow = {name: [_q(item) for item in items] for name, items in summary.overflow.items()}
    text = render(
        "session/summary_file.yaml.j2",
        block=render_block(summary),
        source=source,
        dropped=dropped,
        overflow=overflow,
        budget=summary.budget,
    )
    return scrub(text)[0]


def _validate(data: bytes) -> None:
    import yaml

    loaded = yaml.safe_load(data.decode("utf-8"))
    if not isinstance(loaded, dict) or not isinstance(loaded.get("session_summary"), dict):
        raise BadInput("session summary: the file did not read back as YAML with session_summary")


def summarize(path: Path, session_id: str = "") -> tuple[Extraction, Summary]:
    extraction = extract(path, session_id)
    return extraction, compress(extraction)


def write(project: Project, summary: Summary, transcript: Path | None = None) -> Written:
    """Write the summary to `.ctxward/sessions/<session id>.yaml` (atomic, locked, idempotent)."""
    from ctxward.core.fsutil import atomic_write, locked

    path = summary_path(project, summary.session_id)
    text = render_file(summary, transcript)
    with locked(path, project.locks_dir):
        changed = atomic_write(path, text, validate=_validate)
    return Written(path, summary, changed)


def write_from_hook(project: Project, session_id: str, transcript_path: str) -> Written | None:
    """PreCompact / SessionEnd: summarize the payload's transcript; None when there is none."""
    if not transcript_path:
        return None
    path = Path(transcript_path)
    if not path.is_file():
        return None
    _, summary = summarize(path, session_id)
    if summary.is_empty() and not summary_path(project, summary.session_id).exists():
        return None  # nothing worth a file (a greeting, a /compact of nothing)
    return write(project, summary, path)


def read(project: Project, session_id: str) -> Summary | None:
    """The session's summary from disk; None when there is none or it is not one."""
    path = summary_path(project, session_id)
    from ctxward.core.fsutil import read_regular

    try:
        text = read_regular(path).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    import yaml

    try:
        loaded = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError):  # not ours, an integer too long, too deep
        return None
    return _from_yaml(loaded)


def _strings(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(item) for item in value if isinstance(item, (str, int, float)))


def _from_yaml(loaded: object) -> Summary | None:
    if not isinstance(loaded, dict) or not isinstance(loaded.get("session_summary"), dict):
        return None
    block: dict[str, Any] = loaded["session_summary"]
    user = block.get("user")
    user = user if isinstance(user, dict) else {}
    architecture = block.get("architecture")
    architecture = architecture if isinstance(architecture, dict) else {}
    stack = architecture.get("stack")
    counts = (block.get("token_count"), block.get("compressed_tokens"))
    held = loaded.get("overflow")
    held = held if isinstance(held, dict) else {}
    overflow = {name: _strings(held.get(name)) for name in CRITICAL if _strings(held.get(name))}
    return Summary(
        session_id=str(block.get("session_id") or ""),
        duration=str(block.get("duration") or ""),
        token_count=counts[0] if isinstance(counts[0], int) else 0,
        decisions=_strings(block.get("decisions")),
        errors_and_fixes=_strings(block.get("errors_and_fixes")),
        action_items=_strings(block.get("action_items")),
        level=str(user.get("level") or ""),
        preferences=_strings(user.get("preferences")),
        pattern=str(architecture.get("pattern") or ""),
        stack=tuple(s.strip() for s in stack.split(",") if s.strip())
        if isinstance(stack, str)
        else (),
        skill_updates=_strings(block.get("skill_updates")),
        patterns=_strings(block.get("patterns")),
        compressed_tokens=counts[1] if isinstance(counts[1], int) else 0,
        overflow=overflow,
    )


# --- recovery ---------------------------------------------------------------------------------


def _is_fixed(error: str) -> bool:
    return FIX_MARK.strip() in error


def _entries(summary: Summary) -> list[tuple[str, str]]:
    """Every entry of the summary and its overflow as (kind, text), in the order the recovery
    text gives them room: what is still to do first (the user's level, the open action items,
    the unresolved errors), then the decisions, then what is done, then the rest."""
    actions = summary.everything("action_items")
    errors = summary.everything("errors_and_fixes")
    entries = [("level", summary.level)] if summary.level else []
    entries += [("action", t) for t in actions if not t.endswith(DONE)]
    entries += [("error", t) for t in errors if not _is_fixed(t)]
    entries += [("decision", t) for t in summary.everything("decisions")]
    entries += [("done", t[: -len(DONE)]) for t in actions if t.endswith(DONE)]
    entries += [("fixed", t) for t in errors if _is_fixed(t)]
    entries += [("preference", t) for t in summary.preferences]
    if summary.pattern:
        entries.append(("pattern", summary.pattern))
    if summary.stack:
        entries.append(("stack", ", ".join(summary.stack)))
    entries += [("skill", t) for t in summary.skill_updates]
    entries += [("patterns", t) for t in summary.patterns]
    return entries


# How the "N more" line names what it counts.
_MORE_NAMES = {
    "action": ("action item", "action items"),
    "error": ("error", "errors"),
    "fixed": ("error", "errors"),
    "decision": ("decision", "decisions"),
    "done": ("action item", "action items"),
}


def _view(entries: list[tuple[str, str]], shown: int) -> dict[str, Any]:
    """The recovery text's data: the first `shown` entries, and what the others are."""
    kept: dict[str, list[str]] = {}
    for kind, text in entries[:shown]:
        kept.setdefault(kind, []).append(text)
    architecture = "; ".join(
        [*kept.get("pattern", []), *("stack: " + t for t in kept.get("stack", []))]
    )
    rest = Counter(
        _MORE_NAMES.get(kind, ("other entry", "other entries")) for kind, _ in entries[shown:]
    )
    more = [f"{count} {names[count != 1]}" for names, count in rest.items()]
    return {
        "architecture": architecture,
        "decisions": kept.get("decision", []),
        "fixed": kept.get("fixed", []),
        "completed": kept.get("done", []),
        "pending": kept.get("error", []),
        "open_items": kept.get("action", []),
        "level": (kept.get("level") or [""])[0],
        "preferences": kept.get("preference", []),
        "skill_updates": kept.get("skill", []),
        "patterns": kept.get("patterns", []),
        "more": len(entries) - min(shown, len(entries)),
        "more_kinds": more,
    }


def recovery_text(summary: Summary, where: str, source: str, room: int) -> str:
    """The seed's "Session Recovery" message as facts, at most `room` characters ('' if none).

    Its entries stay within the 200-token view; those that do not fit, lowest priority first,
    are counted in "N more in <where>".
    """
    from ctxward.core.render import render
    from ctxward.core.scrub import scrub

    entries = _entries(summary)
    total = len(entries)

    def text(shown: int) -> str:
        return scrub(
            render("session/recovery.md.j2", v=_view(entries, shown), path=where, source=source)
        )[0]

    def fits(shown: int) -> bool:
        body = text(shown)
        return len(body) <= room and estimate_tokens(_items_part(body)) <= TOKEN_BUDGET

    if fits(total):
        return text(total)
    low, high = 0, total
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return text(low) if low and fits(low) else ""


def _items_part(text: str) -> str:
    """The lines of the recovery text that carry the summary (its header line excluded)."""
    return text.split("\n", 1)[1] if "\n" in text else ""


def pointer_text(summary: Summary, where: str, sha256: str) -> str:
    from ctxward.core.render import render

    counts = {name: len(summary.everything(name)) for name in CRITICAL}
    return render("session/recovery_pointer.md.j2", s=counts, path=where, sha256=sha256)


def has_summary(project: Project, session_id: str) -> bool:
    """One stat: whether SessionStart has a summary to recover from."""
    return summary_path(project, session_id).is_file()


def with_recovery(project: Project, session_id: str, head: str, limit: int, source: str) -> str:
    """`head` (the invariants, already within `limit`) plus the recovery text, within `limit`.

    The invariants come first and are never shortened for it: the recovery text shrinks, then
    becomes a pointer to the YAML file (path and sha256), then is left out.
    """
    summary = read(project, session_id)
    if summary is None or summary.is_empty():
        return head
    path = summary_path(project, session_id)
    where = project.relative(path)
    gap = "\n" if head else ""
    room = limit - len(head) - len(gap)
    text = recovery_text(summary, where, source, room)
    if not text:
        from ctxward.core.fsutil import read_regular, sha256_hex

        text = pointer_text(summary, where, sha256_hex(read_regular(path)))
        if len(text) > room:
            return head
    return head + gap + text


# --- stats ------------------------------------------------------------------------------------


def stats(extraction: Extraction, summary: Summary, path: Path | None = None) -> dict[str, Any]:
    """Compression ratio and counts (seed 001 metrics) for `ctxward session stats`."""
    found = {
        "decisions": len(extraction.decisions),
        "errors_and_fixes": len(extraction.errors_and_fixes),
        "action_items": len(extraction.action_items),
        "preferences": len(extraction.preferences),
        "level": int(bool(extraction.level)),
        "architecture": int(bool(extraction.pattern)) + len(extraction.stack),
        "skill_updates": len(extraction.skill_updates),
        "patterns": len(extraction.patterns),
    }
    return {
        "session_id": summary.session_id,
        "transcript": str(path) if path is not None else None,
        "duration": summary.duration,
        "messages": {"user": extraction.user_messages, "assistant": extraction.assistant_messages},
        "token_count": summary.token_count,
        "compressed_tokens": summary.compressed_tokens,
        "tokens_saved": summary.tokens_saved,
        "ratio": summary.ratio,
        "budget": summary.budget,
        "within_budget": summary.compressed_tokens <= summary.budget,
        "found": found,
        "kept": summary.counts(),
        "dropped": {name: len(items) for name, items in summary.dropped.items()},
        "overflow": {name: len(items) for name, items in summary.overflow.items()},
        "redactions": extraction.redactions,
    }


def as_dict(summary: Summary) -> dict[str, Any]:
    """The summary in the seed's shape (what the YAML holds), for --json."""
    block: dict[str, Any] = {
        "session_id": summary.session_id,
        "duration": summary.duration,
        "token_count": summary.token_count,
        "compressed_tokens": summary.compressed_tokens,
        "tokens_saved": summary.tokens_saved,
        **({"overflow": summary.held_over()} if summary.overflow else {}),
        "decisions": list(summary.decisions),
        "errors_and_fixes": list(summary.errors_and_fixes),
        "action_items": list(summary.action_items),
    }
    user: dict[str, Any] = {}
    if summary.level:
        user["level"] = summary.level
    if summary.preferences:
        user["preferences"] = list(summary.preferences)
    if user:
        block["user"] = user
    architecture = {}
    if summary.pattern:
        architecture["pattern"] = summary.pattern
    if summary.stack:
        architecture["stack"] = ", ".join(summary.stack)
    if architecture:
        block["architecture"] = architecture
    for name in ("skill_updates", "patterns"):
        if getattr(summary, name):
            block[name] = list(getattr(summary, name))
    return block
