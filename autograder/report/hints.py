"""Which catalog message a hint is: a stable id (the English msgid) for a hint read in English or Spanish.

results.json holds the hint as the student read it, formatted and translated. Each message of the kit's
catalog (autograder/locale/es/.../autograder.po: msgid and Spanish msgstr) becomes a pattern, its `{name}`
placeholders any text; a hint that matches one whole is that message, whatever values it was formatted with
and whichever language it was graded in. The most specific match wins (the most literal characters). A hint
that matches none (text built another way) is its own id, digits blurred, so "dimension 0" and "dimension 1"
still count together.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

from .. import i18n

PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*(?:![rsa])?(?::[^{}]*)?\}")
PREFIX = (
    6  # patterns are indexed by their first literal characters: a hint is tried against a few dozen
)
DIGITS = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")
TEXT_ID = "text:"  # the id of a hint no catalog message matches
# a message with fewer characters of its own than this, outside its placeholders, is no hint
MIN_LITERAL = 6
CLAUSES = re.compile(r"(?<=[.;])\s+")  # where a hint made of several messages is cut
MAX_CLAUSES = 6


@dataclass(frozen=True)
class Template:
    msgid: str
    text: str  # the msgid or a translation of it
    literal: int  # characters outside placeholders: the more, the more specific
    glossary: bool = (
        False  # a glossary sentence (glossary.py), put before a hint by the glossary pass
    )

    @functools.cached_property
    def pattern(self) -> re.Pattern:
        """Compiled when first tried (compiling all ~2 600 took 1.6 s; a class tries a few hundred)."""
        parts = PLACEHOLDER.split(self.text)
        return re.compile("(?:.+?)".join(re.escape(p) for p in parts), re.S)


@functools.cache
def _index() -> tuple[dict[str, list[Template]], list[Template]]:
    from babel.messages.pofile import read_po

    by_prefix: dict[str, list[Template]] = {}
    open_start: list[Template] = []
    po = i18n.LOCALE_DIR / "es" / "LC_MESSAGES" / f"{i18n.DOMAIN}.po"
    with open(po, "rb") as f:
        catalog = read_po(f)
    for message in catalog:
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if not ids[0]:
            continue
        for text in {*ids, *(s for s in strings if s)}:
            if "{" not in text and len(text) < 12:
                continue  # a word ("failed", "points"): not a hint
            if len(PLACEHOLDER.sub("", text).strip(" :.,;-")) < MIN_LITERAL:
                continue  # "{verdict}: {summary}": placeholders and punctuation match any hint, name none
            glossary = any(path.endswith("glossary.py") for path, _ in message.locations)
            t = Template(ids[0], text, len(PLACEHOLDER.sub("", text)), glossary)
            head = PLACEHOLDER.split(text)[0]
            if len(head) >= PREFIX:
                by_prefix.setdefault(head[:PREFIX], []).append(t)
            else:
                open_start.append(t)
    return by_prefix, open_start


@functools.cache
def hint_id(text: str) -> str:
    """The catalog msgid the hint is an instance of, else TEXT_ID + the text with its numbers blurred. A hint
    that is no one message whole is read by runs of whole clauses (cut after "." and ";"): a glossary sentence
    put before it ("`d_model` is what the course notebooks call `dim_embedding`: ... Check the layers...") or
    two messages joined ("the paper's optimizer: ...; before step s ...") is the most specific message among
    those runs that is not a glossary sentence."""
    whole = _match(text)
    if whole is not None:
        return whole.msgid
    text = text.strip()
    cuts = list(CLAUSES.finditer(text))[: MAX_CLAUSES - 1]
    starts, ends = [0, *(c.end() for c in cuts)], [*(c.start() for c in cuts), len(text)]
    found = []
    for a in starts:  # every run of whole clauses: a message may hold a "." or ";" of its own
        for b in ends:
            span = text[a:b]
            if b <= a or span == text:
                continue
            t = _match(span) or _match(span[:1].lower() + span[1:])
            if t is not None and not t.glossary:
                found.append(t)
    if found:
        return max(found, key=lambda t: t.literal).msgid
    return TEXT_ID + DIGITS.sub("…", text.strip())


def _match(text: str) -> Template | None:
    """The most specific template that matches the whole text, or None."""
    by_prefix, open_start = _index()
    best = None
    for t in (*by_prefix.get(text[:PREFIX], ()), *open_start):
        if (best is None or t.literal > best.literal) and t.pattern.fullmatch(text):
            best = t
    return best


def label(hid: str, text: str = "") -> str:
    """What the report shows for a hint id, in the current language: `text` (one hint as a student read it) when
    it is that message in this language, so that its values stay ("softmax over dim 0"); else the message with
    its placeholders as …"""
    if hid.startswith(TEXT_ID):
        return text or hid[len(TEXT_ID) :]
    mine = i18n._(hid)
    if text and Template(hid, mine, 0).pattern.fullmatch(text):
        return text
    return PLACEHOLDER.sub("…", mine)


BUG_ID = "bug:"  # a misconception's id: BUG_ID + the catalog Bug's id
JOINT = (
    "|"  # between the ids of bugs the suite says the same of (signatures.misconceptions): "bug:A|B"
)


@functools.cache
def _fragments() -> dict[str, list[tuple[str, str]]]:
    """Per component, (the lower-cased fragment a hint naming the bug holds, the bug's id): Bug.hint."""
    from ..bugs import catalog

    found: dict[str, list[tuple[str, str]]] = {}
    for bug in catalog():
        found.setdefault(bug.component, []).append((bug.hint.lower(), bug.id))
    return found


@functools.cache
def mistake_id(component: str, hid: str) -> str:
    """The misconception a hint of `component` names: BUG_ID + the catalog bug of that component whose hint
    fragment the message holds, when exactly one does (its wordings across properties are one mistake); else
    the message's own id (a message two bugs could claim, or none, stands for itself)."""
    if hid.startswith(TEXT_ID):
        return hid
    text = hid.lower()
    bugs = {bug for fragment, bug in _fragments().get(component, ()) if fragment in text}
    return BUG_ID + bugs.pop() if len(bugs) == 1 else hid


def headline(mistake: str, wordings: Counter) -> tuple[str, str]:
    """The (msgid, text) a misconception's row shows: for a bug, the most frequent wording that holds its hint
    fragment (the one that names it); else, or when none does, the most frequent wording."""
    ranked = [w for w, _ in wordings.most_common()]
    if mistake.startswith(BUG_ID):
        fragments = [_bug_fragments().get(b, "") for b in mistake.removeprefix(BUG_ID).split(JOINT)]
        naming = [w for w in ranked if any(f and f in w[0].lower() for f in fragments)]
        if naming:
            return naming[0]
    return ranked[0]


@functools.cache
def _bug_fragments() -> dict[str, str]:
    return {bug: fragment for pairs in _fragments().values() for fragment, bug in pairs}
