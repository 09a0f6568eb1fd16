"""Extraction: a transcript's user and assistant text, classified into categories (no model)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from ctxward.core.text import tokens_of_size
from ctxward.core.values import Value
from ctxward.errors import BadInput
from ctxward.sessions.patterns import (
    ACTION,
    ACTION_LEAD,
    ARCHITECTURE,
    CAUSE,
    CAUSE_CHARS,
    CAUSE_LEAD,
    CAUSE_WORDS,
    COMMON_WORD,
    COMPLETED,
    DANGLING,
    DECISION,
    DECISION_LEAD,
    DONE,
    ERROR,
    ERROR_CHARS,
    FILLER,
    FIX,
    FIX_CHARS,
    FIX_LEAD,
    FIX_MARK,
    FIX_WINDOW,
    GREETING,
    LEVEL,
    LEVELS,
    PATTERN,
    PREFERENCE,
    REASON,
    REMINDER,
    SKILL,
    SKILL_CHANGE,
    STACK,
    STACK_ALIASES,
    STACK_SIZE,
    architecture_pattern,
    condense,
    content_words,
    lower_first,
    sentences,
    similar,
    typed_text,
)


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
        words = content_words(source)
        if len(words) < 2 or not text:
            return None
        reasoned = bool(REASON.search(source))
        for item in self.sharing(words):
            if similar(item.words, words):
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
        text = typed_text(message.text) if role == "user" else message.text
        if not REMINDER.sub("", text).strip():
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
        if sentence.endswith("?") or (
            GREETING.match(sentence) and len(content_words(sentence)) < 3
        ):
            return
        n = self.messages
        for match in STACK.finditer(sentence):
            name = STACK_ALIASES.get(match.group(1), match.group(1))
            self.stack[name] += 1
            self.stack_order.setdefault(name, len(self.stack_order))
            if match.group(2):
                self.versions.setdefault(name, match.group(2))
        if COMPLETED.search(sentence):
            self._complete(sentence)
        if role == "user" and LEVEL.search(sentence):
            self._level(sentence)
        if ACTION.search(sentence):
            self.actions.add(condense(sentence, lead=ACTION_LEAD), n, sentence)
        elif ERROR.search(sentence) and not FIX_LEAD.match(FILLER.sub("", sentence)):
            self._error(sentence, n)
        elif FIX.search(sentence):
            self._fix(sentence, n)
        elif (
            CAUSE_WORDS.search(sentence)
            and not DECISION.search(sentence)
            and self._cause(sentence, n)
        ):
            pass
        elif DECISION.search(sentence):
            self.decisions.add(condense(sentence, lead=DECISION_LEAD), n, sentence)
        elif role == "user" and (preference := PREFERENCE.search(sentence)):
            said = sentence[preference.start() :]
            self.preferences.add(condense(said, 60), n, said)
        elif ARCHITECTURE.search(sentence):
            self.architecture.add(architecture_pattern(sentence), n, sentence)
        elif SKILL.search(sentence) and SKILL_CHANGE.search(sentence):
            self.skills.add(condense(sentence, 40), n, sentence)
        elif PATTERN.search(sentence):
            self.patterns.add(condense(sentence, 40), n, sentence)

    def _error(self, sentence: str, n: int) -> None:
        """A new error (or one said again); its cause and fix when the same sentence says them."""
        cause = CAUSE_WORDS.search(sentence)
        if cause is not None and cause.start() > 0:
            head = DANGLING.sub("", sentence[: cause.start()])
            tail = CAUSE_LEAD.sub("", sentence[cause.start() :])
            text = condense(head, ERROR_CHARS) + CAUSE + lower_first(condense(tail, CAUSE_CHARS))
        else:
            text = condense(sentence, ERROR_CHARS)
        item = self.errors.add(text, n, sentence)
        if item is None:
            return
        item.caused = item.caused or cause is not None
        if FIX.search(sentence):
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
        fix = condense(FIX_LEAD.sub("", FILLER.sub("", sentence)), FIX_CHARS)
        item = self._recent_error(n, "fixed")
        if item is not None:
            item.text = f"{item.text}{FIX_MARK}{lower_first(fix)}"
            self.errors.grow(item, content_words(sentence))
            item.fixed = True
            return
        alone = self.errors.add(FIX_MARK.lstrip() + condense(sentence), n, sentence)
        if alone is not None:
            alone.fixed = True

    def _cause(self, sentence: str, n: int) -> bool:
        """Join a cause to the latest error said shortly before that has none; False if none."""
        item = self._recent_error(n, "caused")
        if item is None:
            return False
        cause = lower_first(condense(CAUSE_LEAD.sub("", FILLER.sub("", sentence)), CAUSE_CHARS))
        error, mark, fix = item.text.partition(FIX_MARK)
        item.text = f"{error}{CAUSE}{cause}{mark}{fix}"
        self.errors.grow(item, content_words(sentence))
        item.caused = True
        return True

    def _complete(self, sentence: str) -> None:
        """Mark an earlier open action done when this sentence says it was done."""
        words = content_words(sentence)
        for item in self.actions.sharing(words):
            if item.done or item.message >= self.messages:
                continue
            if item.words and len(item.words & words) / len(item.words) >= 0.6:
                item.done = True

    def _level(self, sentence: str) -> None:
        match = LEVEL.search(sentence)
        if match is None:  # pragma: no cover - the caller matched it
            return
        said = (match.group(1) or "").lower()
        if match.group(2):
            level = "beginner"
        elif match.group(3):
            level = "advanced"
        else:
            level = LEVELS.get(said, "intermediate")
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
            token_count=tokens_of_size(self.content_bytes),
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
