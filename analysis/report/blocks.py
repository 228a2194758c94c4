"""The report's document model: sections made of paragraphs, tables and figures.

Section builders produce these blocks; ``analysis.report.rendering`` turns them into
Markdown and HTML, and ``analysis.report`` writes every table's data to CSV.
"""

from __future__ import annotations

import os
import pickle
import tempfile
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Paragraph:
    """Plain text (no markup): rendered escaped in HTML and as is in Markdown."""

    text: str


class SpooledFrame:
    """A frame kept in a temporary file (a pickle, which gives back the same values and types)
    until it is read; the file goes when the object does."""

    def __init__(self, frame: pd.DataFrame) -> None:
        fd, path = tempfile.mkstemp(prefix="judgelab-report-table-", suffix=".pickle")
        self.path = path
        self._remove = weakref.finalize(self, _remove_file, path)
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(frame, handle, protocol=pickle.HIGHEST_PROTOCOL)

    def frame(self) -> pd.DataFrame:
        """The frame, read from the file (each call its own copy)."""
        with open(self.path, "rb") as handle:
            return pickle.load(handle)  # noqa: S301 - the report's own file, written above


def _remove_file(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


@dataclass(frozen=True)
class Table:
    """A table shown in the report; ``data`` (default: ``shown``) goes to ``<name>.csv``.

    ``csv_only`` tables are written to CSV and not shown (a sentence should point to the file).
    ``spooled``: the CSV's data waiting on disk (:func:`spool_tables`), in place of ``data``.

    Tables with the same ``name`` from different projects are concatenated into one CSV,
    so ``data`` should carry a ``project`` column.
    """

    name: str
    caption: str
    shown: pd.DataFrame
    data: pd.DataFrame | None = None
    csv_only: bool = False  # written to <name>.csv but not shown on the page
    spooled: SpooledFrame | None = field(default=None, compare=False, repr=False)

    @property
    def csv_data(self) -> pd.DataFrame:
        if self.spooled is not None:
            return self.spooled.frame()
        return self.shown if self.data is None else self.data

    def with_csv_data_on_disk(self) -> Table:
        """This table with its CSV's data in a temporary file; what the page shows stays (a table
        written only to CSV keeps its columns, no rows)."""
        if self.spooled is not None:
            return self
        if self.data is not None:
            return replace(self, data=None, spooled=SpooledFrame(self.data))
        if self.csv_only:
            return replace(self, shown=self.shown.iloc[0:0], spooled=SpooledFrame(self.shown))
        return self  # its rows are on the page


def spool_tables(sections: list[Section], min_rows: int) -> None:
    """Put the CSV data of every table of ``sections`` (and their subsections) with at least
    ``min_rows`` rows on disk until the report writes it: the tables of every annotation (a quick
    submission's speed, an attention check's answer) are hundreds of thousands of rows on a big
    project, which every section after theirs would otherwise run beside. ``min_rows`` 0: none."""
    if min_rows <= 0:
        return
    for section in sections:
        section.blocks = [_spooled_block(block, min_rows) for block in section.blocks]
        spool_tables(section.subsections, min_rows)


def _spooled_block(block: Block, min_rows: int) -> Block:
    if isinstance(block, Table):
        rows = len(block.shown if block.data is None else block.data) if block.spooled is None else 0
        return block.with_csv_data_on_disk() if rows >= min_rows else block
    if isinstance(block, Details):
        return replace(block, blocks=[_spooled_block(inner, min_rows) for inner in block.blocks])
    return block


@dataclass(frozen=True, eq=False)
class Figure:
    """A PNG image, embedded as base64 in the HTML report.

    ``png`` holds the image, or ``render`` draws it when the page is written (``None`` from it:
    nothing to draw, the figure is left out). In a faceted report, figures of one kind from
    every cell are drawn as one when they share a ``combine`` function: it gets
    ``[(cell label, payload), ...]`` (each cell's ``payload``) and returns the PNG.
    """

    caption: str
    png: bytes | None = None
    render: Callable[[], bytes | None] | None = None
    combine: Callable[[list[tuple[str, Any]]], bytes | None] | None = None
    payload: Any = None

    def image(self) -> bytes | None:
        """The PNG (drawn once, on first use)."""
        if self.png is None and self.render is not None:
            object.__setattr__(self, "png", self.render())
            object.__setattr__(self, "render", None)
        return self.png


@dataclass(frozen=True)
class Details:
    """Blocks folded under a one-line summary (HTML ``<details>``; Markdown: a bold line, then the
    blocks): the sentences of one facet cell, say."""

    summary: str
    blocks: list[Block] = field(default_factory=list)
    open: bool = False


@dataclass(frozen=True)
class Gallery:
    """Figures side by side (one per facet cell), each with its own caption."""

    figures: list[Figure] = field(default_factory=list)


@dataclass(frozen=True)
class Finding:
    """A sentence with a link to the section that holds its numbers (``target``)."""

    text: str
    target: Section | None = None


@dataclass(frozen=True)
class Glance:
    """What a section found, for the front page's summary table, as a typed value: the study
    lead's ``topic`` ("Agreement", "Judges", ...), the ``subject`` (an item, a judge), the
    ``answer`` in a few words with its numbers, and ``value``, the number it rests on (``None``
    when nothing could be computed: ``answer`` then says why). ``cell`` is the facet cell it
    belongs to ("" when the report is not cut, "(all)" for the pooled cell)."""

    topic: str
    subject: str
    answer: str
    value: float | None = None
    cell: str = ""


@dataclass(frozen=True)
class GlanceTable:
    """The front page's summary: one row per :class:`Glance`, each linking to its section."""

    rows: list[tuple[Glance, Section | None]] = field(default_factory=list)
    caption: str = "The study at a glance"


Block = Paragraph | Table | Figure | Details | Gallery | Finding | GlanceTable


@dataclass
class Section:
    """A titled part of the report; ``subsections`` nest one heading level deeper."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    subsections: list[Section] = field(default_factory=list)
    glance: list[Glance] = field(default_factory=list)  # its findings for the front page's summary

    def glances(self) -> list[tuple[Glance, Section]]:
        """Every finding of this section and its subsections, with the section that holds it."""
        own = [(g, self) for g in self.glance]
        return own + [pair for sub in self.subsections for pair in sub.glances()]

    def tables(self) -> list[Table]:
        """Every table of this section and its subsections, in order."""
        own = [table for block in self.blocks for table in _tables_in(block)]
        return own + [table for sub in self.subsections for table in sub.tables()]

    def find(self, table_name: str) -> tuple[Section, Table] | None:
        """The first section (this one or below) with a table named ``table_name``, and the table."""
        for block in self.blocks:
            for table in _tables_in(block):
                if table.name == table_name:
                    return self, table
        for sub in self.subsections:
            found = sub.find(table_name)
            if found is not None:
                return found
        return None


def _tables_in(block: object) -> list[Table]:
    if isinstance(block, Table):
        return [block]
    if isinstance(block, Details):
        return [table for inner in block.blocks for table in _tables_in(inner)]
    return []
