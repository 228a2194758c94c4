"""What a section builder receives (:class:`ProjectData`), and the wording every section shares.

A builder reads one project's tidy tables through :class:`ProjectData`, which also carries
the report's options (bootstrap size, clustering on or off), the other projects of the same
schema (``peers``: StorySumm's gold labels for the evaluation-interface annotators, say) and
a cache, so that two sections needing the same computation (span F1, the agreement table)
run it once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from judgelab.analysis.facets import Cut, FacetCell
from judgelab.analysis.grouped import RowGroups, per_group, with_groups
from judgelab.analysis.kinds import effective_meta, item_kinds
from judgelab.analysis.report.blocks import Block, Paragraph, Section, Table
from judgelab.analysis.rubber_stamping import KEPT_SHARE_MIN, TIME_RATIO_MAX
from judgelab.analysis.tables import (
    HUMAN_SOURCE,
    MODEL_SOURCE_PREFIX,
    cancelled_mask,
    natural_key,
    only_columns,
    rows_where,
    shared_strings,
    shared_text,
    usable_judgments,
)
from judgelab.configs.schema import line_item_regex

GOLD_SOURCE = "gold"
FEW_UNITS = 30  # below this, say that a value is fragile
T = TypeVar("T")


@dataclass(frozen=True)
class ReportOptions:
    """Knobs of a report run.

    ``cluster`` adds the span clustering section (needs the ``clustering`` extra);
    ``n_boot`` and ``seed`` set the bootstrap intervals; ``max_rows`` caps the rows a long
    table shows on the page (its CSV always has every row). ``by`` and ``where`` cut every
    table and figure (see ``analysis.report.faceting``); ``None`` takes the cut kept with the
    project's tables (``cuts``, by project id as text), and a project without one is whole.
    ``exclude_annotators`` and ``exclude_rubber_stampers`` leave annotators out of the study's
    estimates (every other section still counts them); ``stamp_kept_share`` and
    ``stamp_time_ratio`` are the rubber-stamping rule's thresholds (``analysis.rubber_stamping``).
    ``spool_rows``: a table's CSV data of at least this many rows waits on disk, not in memory,
    from its section until the report writes it (0: every table stays in memory; the files are
    the same).
    """

    cluster: bool = False
    n_boot: int = 1000
    seed: int = 0
    max_rows: int = 25
    by: tuple[str, ...] | None = None  # None: the project's kept cut; (): no facets
    where: str | None = None  # None: the project's kept cut; "": no filter
    cuts: Mapping[str, Cut] = field(default_factory=dict)  # the cut kept with each project's tables
    # who the study's estimates leave out (``analysis.report.sections.rubber_stamping.left_out_annotators``
    # resolves them per project, with the reason): annotators by name, and with ``exclude_rubber_stampers``
    # those the project's rubber-stamping rule flags (thresholds ``stamp_kept_share``, ``stamp_time_ratio``)
    exclude_annotators: frozenset[str] = frozenset()
    exclude_rubber_stampers: bool = False
    stamp_kept_share: float = KEPT_SHARE_MIN
    stamp_time_ratio: float = TIME_RATIO_MAX
    spool_rows: int = 20_000


@dataclass(frozen=True)
class ProjectData:
    """The tidy tables of one project and its schema's metadata.

    ``peers`` maps every other project of the same schema in the report run to its tables
    (``tasks``, ``judgments``, ``spans``); ``problems`` holds the loader's notes for this
    project (may be empty), ``notes`` what reading the tables found odd (sentences); ``usage`` the
    LLM's token usage, when the tables have it. In a
    faceted report a builder gets one cell's rows (``facet`` says which cell) and ``whole`` holds
    the project's rows of every cell (after ``--where``); the kinds of items (``meta``, ``kinds``)
    are always decided on ``whole``.
    """

    project: object
    schema_name: str | None
    schema_meta: Mapping[str, Any]
    tasks: pd.DataFrame
    judgments: pd.DataFrame
    spans: pd.DataFrame
    options: ReportOptions = field(default_factory=ReportOptions)
    peers: Mapping[object, Mapping[str, pd.DataFrame]] = field(default_factory=dict)
    problems: pd.DataFrame = field(default_factory=pd.DataFrame)
    usage: pd.DataFrame | None = None  # the LLM's token usage per task and model version (``usage`` table)
    cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    facet: FacetCell | None = None
    whole: ProjectData | None = field(default=None, compare=False, repr=False)
    title: str | None = None
    groups: RowGroups | None = field(default=None, compare=False, repr=False)  # the whole's: its cells' rows
    cell_number: int | None = None  # a cell's group in ``whole.groups`` (None: not faceted, or the '(all)' cell)
    notes: tuple[str, ...] = ()  # what reading the tables found odd and how it was taken (the loading notes show it)

    @property
    def all_cells(self) -> ProjectData:
        """The project's data of every cell (itself when the report is not faceted)."""
        return self.whole if self.whole is not None else self

    def cached(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per project and ``key``."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]

    def per_cell(self, key: str, compute: Callable[[ProjectData, RowGroups | None], list[T]]) -> T:
        """This project's (or cell's) result of a grouped computation, once per ``key``.

        ``compute(data, groups)`` returns one result per group of ``groups`` (one for every row
        when ``groups`` is None; see ``analysis.grouped``). In a faceted report it runs once, on
        the whole project with every cell as a group, and each cell takes its own result;
        otherwise (and for the '(all)' cell) it runs on this data as one group."""
        whole = self.whole
        if whole is not None and whole.groups is not None and self.cell_number is not None:
            groups = whole.groups
            return whole.cached(f"{key} (every cell)", lambda: compute(whole, groups))[self.cell_number]
        return self.cached(key, lambda: compute(self, None)[0])

    @property
    def human_judgments(self) -> pd.DataFrame:
        return self.judgments[self.judgments["source"] == HUMAN_SOURCE]

    @property
    def human_spans(self) -> pd.DataFrame:
        return self.spans[self.spans["source"] == HUMAN_SOURCE]

    @property
    def usable_human(self) -> pd.DataFrame:
        """Human judgments of annotations that were not cancelled (unnamed annotators named); a
        cell's are its rows of the whole project's (the rule is row by row)."""
        return self.per_cell(
            "usable_human",
            lambda d, g: per_group(usable_judgments(with_groups(d.judgments, g, "judgments"), source=HUMAN_SOURCE), g),
        )

    @property
    def sources(self) -> list[str]:
        values = set(self.judgments["source"].dropna().unique()) | set(self.spans["source"].dropna().unique())
        return sorted((str(v) for v in values), key=natural_key)

    @property
    def model_sources(self) -> list[str]:
        return [source for source in self.sources if source.startswith(MODEL_SOURCE_PREFIX)]

    @property
    def meta(self) -> Mapping[str, Any]:
        """The schema's metadata plus rating scales inferred for undeclared numeric items (decided
        on the rows of every cell)."""
        if self.whole is not None:
            return self.whole.meta
        return self.cached("meta", lambda: effective_meta(self.schema_meta, self.usable_human))

    @property
    def kinds(self) -> dict[str, tuple[str, str]]:
        """``item -> (kind, origin)`` (see ``analysis.kinds.item_kinds``), decided on every cell's rows."""
        if self.whole is not None:
            return self.whole.kinds
        return self.cached("kinds", lambda: item_kinds(self.schema_meta, self.usable_human))

    @property
    def inferred_scales(self) -> list[str]:
        declared = set((self.schema_meta or {}).get("scales") or {})
        return [item for item in (self.meta.get("scales") or {}) if item not in declared]


def whole_project(builder: Callable[[ProjectData], T]) -> Callable[[ProjectData], T]:
    """Mark a section builder that describes the whole project (overview, loading notes): in a
    faceted report it runs once on every cell's rows instead of once per cell."""
    builder.whole_project = True  # type: ignore[attr-defined]
    return builder


# -- who annotated what --------------------------------------------------------------------


def rater_names(frame: pd.DataFrame) -> pd.Series:
    """A human's name, or a model's source (``model:<version>``), per row."""
    annotator = frame["annotator"] if "annotator" in frame.columns else pd.Series(None, index=frame.index)
    source = frame["source"].fillna(HUMAN_SOURCE).astype(str)
    named = annotator.where(annotator.notna() & (annotator.astype(str).str.strip() != ""), None)
    fallback = "annotation " + frame["annotation_id"].astype(str)
    # kept by the report (coverage, the span measures' examples): a name's one string for its rows
    human_name = shared_text(named.where(named.notna(), fallback))
    return human_name.where(source == HUMAN_SOURCE, shared_strings(source))


def rater_spans(data: ProjectData) -> pd.DataFrame:
    """Spans of annotations that were not cancelled, with a ``rater`` column (see :func:`rater_names`)."""

    def compute() -> pd.DataFrame:
        cancelled = set(data.judgments.loc[cancelled_mask(data.judgments), "annotation_id"])
        kept = ~data.spans["annotation_id"].isin(cancelled)
        # with none cancelled, the table itself (a filter copies every column, texts included)
        spans = rows_where(data.spans, kept)
        return spans.assign(rater=rater_names(spans)) if not spans.empty else spans.assign(rater=pd.Series(dtype=str))

    return data.cached("rater_spans", compute)


def coverage(data: ProjectData) -> pd.DataFrame:
    """``project, task_id, rater``: who annotated which task (a judgment or a span counts)."""

    def compute() -> pd.DataFrame:
        read = only_columns(data.judgments, "project", "task_id", "annotator", "source", "annotation_id")
        judgments = read[~cancelled_mask(data.judgments)]  # the columns read, not every one copied
        rows = [judgments.assign(rater=rater_names(judgments))[["project", "task_id", "rater"]]]
        spans = rater_spans(data)
        if not spans.empty:
            rows.append(spans[["project", "task_id", "rater"]])
        return pd.concat(rows, ignore_index=True).drop_duplicates().reset_index(drop=True)

    return data.cached("coverage", compute)


def task_keys(data: ProjectData) -> pd.DataFrame:
    """``project, task_id`` of every task of the project (tasks table, judgments and spans)."""
    frames = [frame[["project", "task_id"]] for frame in (data.tasks, data.judgments, data.spans) if not frame.empty]
    if not frames:
        return pd.DataFrame(columns=["project", "task_id"])
    return pd.concat(frames, ignore_index=True).drop_duplicates().reset_index(drop=True)


# -- wording ---------------------------------------------------------------------------------


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural_form or noun + 's'}"


def listed(names: Sequence[str], joiner: str = "and") -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + f" {joiner} {names[-1]}"


def at_extreme(values: pd.Series, shown: Callable[[Any], str], highest: bool = True) -> pd.Series:
    """The entries of ``values`` (missing ones left out) that read in the report as its highest
    (or lowest) one does, ``shown`` printing them: a sentence names every one of them, not the
    first by digits it does not show."""
    values = values.dropna()
    if values.empty:
        return values
    printed = shown(values.max() if highest else values.min())
    return values[values.map(lambda value: shown(value) == printed)]


def highest_and_lowest(values: pd.Series, shown: Callable[[Any], str]) -> tuple[pd.Index, pd.Index] | None:
    """The labels of the entries that read as the highest and of those that read as the lowest
    (:func:`at_extreme`), or None when every entry reads alike: a sentence then says they are the
    same, not that one is the highest and another the lowest."""
    high, low = at_extreme(values, shown), at_extreme(values, shown, highest=False)
    return None if len(high) == len(values.dropna()) else (high.index, low.index)


def first_of(clauses: Sequence[str], limit: int, rest: Callable[[int], str] = lambda n: f"{n} more") -> str:
    """``a; b; and 2 more``: the first ``limit`` of tied entries' clauses, then ``rest`` of how many
    are left unnamed (their table has them all)."""
    named = list(clauses)[:limit]
    more = len(clauses) - len(named)
    return "; ".join(named) + (f"; and {rest(more)}" if more else "")


def counts_of(counts: Sequence[int], noun: str, plural_form: str | None = None) -> str:
    """What one or several tied entries rest on: ``40 summaries``, ``40 summaries each`` or
    ``40 and 38 summaries respectively``."""
    counts = [int(count) for count in counts]
    if len(counts) == 1:
        return plural(counts[0], noun, plural_form)
    nouns = plural_form or noun + "s"
    if len(set(counts)) == 1:
        return f"{counts[0]} {nouns} each"
    return f"{listed([str(count) for count in counts])} {nouns} respectively"


def number(value: float, digits: int = 3) -> str:
    return "n/a" if is_nan(value) else f"{value:.{digits}f}"


def two_places(value: float) -> str:
    """A mean score, a distance in points or a rho as the sentences print them."""
    return number(value, 2)


def alpha_words(alpha: float, low: float, high: float, level: str) -> str:
    """``ordinal alpha 0.62 [0.51, 0.70]: tentative`` (Krippendorff's 0.667 and 0.800 bars, said
    only where the interval lies wholly on one side of them)."""
    interval = "" if is_nan(low) or is_nan(high) else f" [{number(low, 2)}, {number(high, 2)}]"
    text = f"{level} alpha {number(alpha, 2)}{interval}"
    if is_nan(low) or is_nan(high):
        return text
    if low >= 0.8:
        return text + ": reliable (above 0.800)"
    if high < 0.667:
        return text + ": below 0.667"
    if low >= 0.667 and high < 0.8:
        return text + ": tentative (0.667-0.800)"
    return text


def percent(value: float) -> str:
    return "n/a" if is_nan(value) else f"{value:.0%}"


def p_value(value: float) -> str:
    if is_nan(value):
        return "p n/a"
    return "p < 0.001" if value < 0.001 else f"p = {value:.3f}"


#: a chance-corrected coefficient (alpha, a kappa) on shared units is undefined only where every
#: answer is alike: chance then accounts for all the agreement and there is nothing left to measure
ALL_ALIKE = "undefined (all answers alike)"


def coefficient(value: float, digits: int = 3, label: Callable[[float], str] | None = None) -> str:
    """``0.512`` (or ``0.512 (moderate)`` with ``label``), or ``undefined (all answers alike)``."""
    if is_nan(value):
        return ALL_ALIKE
    return number(value, digits) + (f" ({label(value)})" if label else "")


def welch_words(t: float, p: float) -> str:
    """``Welch's t 2.10, p = 0.041``, or why there is no test (a side with fewer than two values,
    or no spread on either side)."""
    if is_nan(t) or is_nan(p):
        return "no Welch's t: it needs two values on each side and some spread"
    return f"Welch's t {number(t, 2)}, {p_value(p)}"


def is_nan(value: object) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float | np.floating) and math.isnan(value)


def n_unique(frame: pd.DataFrame, column: str) -> int:
    return int(frame[column].nunique()) if column in frame.columns else 0


def kappa_label(value: float) -> str:
    """Landis and Koch's (1977) words for a kappa-like value."""
    if is_nan(value):
        return "undefined"
    if math.isclose(value, 0.0, abs_tol=1e-9):
        return "no better than chance"
    if value < 0:
        return "worse than chance"
    for upper, label in ((0.2, "slight"), (0.4, "fair"), (0.6, "moderate"), (0.8, "substantial")):
        if value <= upper:
            return label
    return "almost perfect"


def alpha_label(value: float) -> str:
    """Krippendorff's (2004) reading of alpha."""
    if is_nan(value):
        return "undefined"
    if value >= 0.8:
        return "reliable by Krippendorff's 0.800 rule"
    if value >= 0.667:
        return "enough only for tentative conclusions (0.667-0.800)"
    return "below Krippendorff's 0.667 minimum"


def fragile(n_units: int, what: str = "shared task", what_plural: str | None = None) -> str:
    """A warning sentence when a value rests on few units, else ''."""
    if 0 < n_units < FEW_UNITS:
        return f" With only {plural(n_units, what, what_plural)}, a few more could change this noticeably."
    return ""


def short_table(
    name: str, caption: str, frame: pd.DataFrame, max_rows: int, data: pd.DataFrame | None = None
) -> list[Block]:
    """A table showing at most ``max_rows`` rows, with a note when rows were left off the page."""
    blocks: list[Block] = []
    shown = frame if len(frame) <= max_rows else frame.head(max_rows)
    blocks.append(Table(name, caption, shown.reset_index(drop=True), data=frame if data is None else data))
    if len(frame) > max_rows:
        blocks.append(Paragraph(f"The table shows the first {max_rows} of {len(frame)} rows; {name}.csv has them all."))
    return blocks


def section_or_none(title: str, intro: list[Block], subsections: list[Section | None]) -> Section | None:
    """A section of ``intro`` blocks and the subsections that are not ``None``; ``None`` when
    no subsection is left (an introduction alone says nothing)."""
    kept = [sub for sub in subsections if sub is not None]
    if not kept:
        return None
    return Section(title, intro, kept)


def with_project(frame: pd.DataFrame, project: object) -> pd.DataFrame:
    """``frame`` with a first ``project`` column (CSV tables of several projects concatenate)."""
    if "project" in frame.columns:
        return frame
    return frame.assign(project=project)[["project", *frame.columns]]


LINE_ITEM = line_item_regex()


def has_line_items(judgments: pd.DataFrame) -> bool:
    return bool(judgments["item"].astype(str).str.match(LINE_ITEM).any()) if not judgments.empty else False
