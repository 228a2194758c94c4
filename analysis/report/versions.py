"""Model versions by a short name on the page, the full string in one table.

A prediction's model version says everything that decides its answers
(``judgelab-llm-judge-mini-k3-370adbd7bf-summary_flaws-144fba54ef``: annotator, model, samples,
the prompt's digest, schema, label config's digest), which makes it unreadable in a sentence. The
report shows each version by a short name (``judge-mini x3``), lists the full strings once in the
front page's "Model versions" table, and keeps them in every CSV.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

import pandas as pd

from judgelab.analysis.report.blocks import Block, Details, Finding, Gallery, GlanceTable, Paragraph, Section, Table
from judgelab.analysis.tables import MODEL_SOURCE_PREFIX

_JUDGELAB = re.compile(
    r"^judgelab-(?P<annotator>[a-z]+)-(?P<rest>.+?)-(?P<schema>[A-Za-z0-9_]+)-(?P<digest>[0-9a-f]{10})$"
)
_JUDGE = re.compile(r"^(?P<label>.+?)(?:-k(?P<samples>\d+))?-(?P<digest>[0-9a-f]{10})$")


def short_version(version: str) -> str:
    """A model version in a few words.

    >>> short_version("model:judgelab-llm-judge-mini-k3-370adbd7bf-summary_flaws-144fba54ef")
    'judge-mini x3'
    >>> short_version("judgelab-llm-gpt-4o-0a1b2c3d4e-hotel_spans-144fba54ef")
    'gpt-4o'
    >>> short_version("judgelab-llm-370adbd7bf-hotel_spans-144fba54ef")  # the default judge: no model name
    'llm 370adbd7'
    >>> short_version("judgelab-offline-2-custom-252a937ebe")
    'offline 2'
    >>> short_version("model:minicheck")  # a loaded data set's judge keeps its name
    'minicheck'
    """
    version = version.removeprefix(MODEL_SOURCE_PREFIX)
    match = _JUDGELAB.match(version)
    if match is None:
        return version
    rest = match["rest"]
    judge = _JUDGE.match(rest)
    if judge is not None:
        return judge["label"] + (f" x{judge['samples']}" if judge["samples"] else "")
    if re.fullmatch(r"[0-9a-f]{10}", rest):
        return f"{match['annotator']} {rest[:8]}"
    return f"{match['annotator']} {rest}"


def short_names(sources: Iterable[str]) -> dict[str, str]:
    """``model:<version>`` -> its short name, for the model sources among ``sources``; a short name
    two versions would share is made unique with the version's last digest."""
    versions = sorted({s for s in sources if isinstance(s, str) and s.startswith(MODEL_SOURCE_PREFIX)})
    names = {source: short_version(source) for source in versions}
    counts = pd.Series(list(names.values()), dtype=object).value_counts()
    for source, name in names.items():
        if counts.get(name, 0) > 1:
            names[source] = f"{name} ({source[-10:]})"
    return {source: name for source, name in names.items() if name != source.removeprefix(MODEL_SOURCE_PREFIX)}


def versions_table(names: dict[str, str]) -> pd.DataFrame:
    return pd.DataFrame(
        {"short name": list(names.values()), "model version": [s.removeprefix(MODEL_SOURCE_PREFIX) for s in names]}
    )


def shorten(sections: list[Section], names: dict[str, str]) -> None:
    """Every sentence, caption and shown table cell of ``sections`` with the short names (CSV data
    keeps the full versions)."""
    if not names:
        return
    pairs = sorted(
        [(full, short) for source, short in names.items() for full in (source, source.removeprefix("model:"))],
        key=lambda pair: -len(pair[0]),
    )
    pattern = re.compile("|".join(re.escape(full) for full, _ in pairs))
    lookup = dict(pairs)

    def text(value: str) -> str:
        return pattern.sub(lambda m: lookup[m.group(0)], value)

    def block(item: Block) -> Block:
        if isinstance(item, Paragraph):
            return Paragraph(text(item.text))
        if isinstance(item, Finding):
            return Finding(text(item.text), item.target)
        if isinstance(item, Details):
            return Details(text(item.summary), [block(inner) for inner in item.blocks], item.open)
        if isinstance(item, GlanceTable):
            rows = [(replace(g, subject=text(g.subject), answer=text(g.answer)), s) for g, s in item.rows]
            return GlanceTable(rows, text(item.caption))
        if isinstance(item, Gallery):
            return Gallery([replace(f, caption=text(f.caption)) for f in item.figures])
        if isinstance(item, Table):
            shown = item.shown.copy()
            for column in shown.columns:
                if pd.api.types.is_object_dtype(shown[column]) or pd.api.types.is_string_dtype(shown[column]):
                    shown[column] = shown[column].map(lambda v: text(v) if isinstance(v, str) else v)
            shown.columns = [text(str(c)) for c in shown.columns]
            data = item.shown if item.data is None and item.spooled is None else item.data  # the full versions
            return replace(item, caption=text(item.caption), shown=shown, data=data)
        return replace(item, caption=text(item.caption)) if hasattr(item, "caption") else item

    for section in sections:
        section.title = text(section.title)
        section.blocks = [block(item) for item in section.blocks]
        shorten(section.subsections, names)
