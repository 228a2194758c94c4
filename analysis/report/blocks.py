"""The report's document model: sections made of paragraphs, tables and figures.

Section builders produce these blocks; ``analysis.report_rendering`` turns them into
Markdown and HTML, and ``analysis.report`` writes every table's data to CSV.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class Paragraph:
    """Plain text (no markup): rendered escaped in HTML and as is in Markdown."""

    text: str


@dataclass(frozen=True)
class Table:
    """A table shown in the report; ``data`` (default: ``shown``) goes to ``<name>.csv``.

    ``csv_only`` tables are written to CSV and not shown (a sentence should point to the file).

    Tables with the same ``name`` from different projects are concatenated into one CSV,
    so ``data`` should carry a ``project`` column.
    """

    name: str
    caption: str
    shown: pd.DataFrame
    data: pd.DataFrame | None = None
    csv_only: bool = False  # written to <name>.csv but not shown on the page

    @property
    def csv_data(self) -> pd.DataFrame:
        return self.shown if self.data is None else self.data


@dataclass(frozen=True)
class Figure:
    """A PNG image, embedded as base64 in the HTML report."""

    caption: str
    png: bytes


Block = Paragraph | Table | Figure


@dataclass
class Section:
    """A titled part of the report; ``subsections`` nest one heading level deeper."""

    title: str
    blocks: list[Block] = field(default_factory=list)
    subsections: list[Section] = field(default_factory=list)

    def tables(self) -> list[Table]:
        """Every table of this section and its subsections, in order."""
        own = [block for block in self.blocks if isinstance(block, Table)]
        return own + [table for sub in self.subsections for table in sub.tables()]
