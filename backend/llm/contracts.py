"""The contracts between the LLM modules, fixed first so each can be built on its own.

- ``answers`` parses a model's text into :class:`ParsedAnswer` (never raises);
- ``alignment`` places :class:`RawSpan` texts on the task text as :class:`AlignedSpan`;
- ``tasks`` (one :class:`LLMTask` per schema, spacy-llm style) renders prompts and turns a
  parsed answer into a :class:`~backend.draft.Draft`;
- ``client`` sends chat requests to any OpenAI-compatible endpoint;
- ``annotators.llm`` runs tasks through the client with concurrency, deadline, cache and retries.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Protocol

from judgelab.backend.draft import Draft

MATCH_KINDS = ("exact", "case", "normalized", "fuzzy", "unmatched")


@dataclass
class RawSpan:
    """A span as the model gave it: its text, label (name, index or other case), reason."""

    text: str
    label: str | int | None = None
    reason: str | None = None
    occurrence_index: int | None = None  # which repeat of ``text`` (0-based), if the model said
    field: str | None = None  # which task text it is on, when a task has several (``line_3``)


@dataclass
class ParsedAnswer:
    spans: list[RawSpan] = field(default_factory=list)
    fields: dict[str, Any] = field(default_factory=dict)  # every other top-level key of the answer
    dropped: int = 0  # malformed items dropped one by one
    problems: list[str] = field(default_factory=list)  # what was repaired or dropped, for logs
    none_identified: bool = False  # the model said explicitly that there is nothing to mark


@dataclass
class AlignedSpan:
    start: int  # Python code points into the task text
    end: int
    label: str | int | None
    reason: str | None
    match: str  # one of MATCH_KINDS except "unmatched"
    text: str  # == task_text[start:end]


@dataclass
class AlignmentReport:
    spans: list[AlignedSpan] = field(default_factory=list)
    counts: Counter = field(default_factory=Counter)  # match kind -> n, plus "unmatched", "overlap_dropped"


class LLMTask(Protocol):
    """One schema's prompt and answer handling (``backend.llm.tasks``)."""

    name: str

    @property
    def version(self) -> str:
        """Changes whenever the prompt template or the expected output changes."""
        ...

    def messages(self, data: dict[str, Any]) -> list[dict[str, str]]:
        """Chat messages for one task."""
        ...

    def response_format(self) -> dict[str, Any] | None:
        """A JSON-schema ``response_format`` when structured output helps, else None."""
        ...

    def to_draft(self, answer_text: str, data: dict[str, Any]) -> Draft:
        """Parse, align and validate one answer; never raises; counters go to ``Draft.info``."""
        ...
