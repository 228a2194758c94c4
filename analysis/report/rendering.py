"""Render report sections as Markdown and as one self-contained HTML page."""

from __future__ import annotations

import base64
import html
import math
import numbers
import re
import unicodedata
from collections.abc import Sequence

import pandas as pd

from judgelab.analysis.facets import TOTAL_LABEL
from judgelab.analysis.report.blocks import (
    Block,
    Details,
    Figure,
    Finding,
    Gallery,
    GlanceTable,
    Paragraph,
    Section,
    Table,
)
from judgelab.analysis.report.safe_text import markdown_text

MISSING = "n/a"
NUMBER_TEXT = re.compile(r"-?\d+(\.\d+)?%?|-?\d+(\.\d+)?–-?\d+(\.\d+)?")  # 3.12, 45%, 0.41–0.73
HTML_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 78rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #222; }
h1, h2, h3 { line-height: 1.2; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.5rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .92rem; }
caption { text-align: left; font-weight: 600; padding-bottom: .3rem; }
th, td { border: 1px solid #ddd; padding: .25rem .6rem; vertical-align: top; }
th { background: #f3f3f3; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td { max-width: 26rem; }
figure { margin: 1rem 0; } figcaption { font-size: .9rem; color: #555; }
img { max-width: 100%; }
nav ul.contents { list-style: none; padding: .5rem .8rem; margin: 0 0 1rem; background: #f7f7f7;
                  border: 1px solid #e3e3e3; border-radius: 4px; font-size: .92rem; }
nav ul.contents li { margin: .2rem 0; } nav .sub a { color: #2a5db0; } nav .sub { color: #999; }
.scroll { overflow-x: auto; max-width: 100%; }
h3 { margin-top: 2rem; } h4 { margin-top: 1.5rem; color: #333; }
p { max-width: 60rem; }
details { margin: .4rem 0; } summary { cursor: pointer; color: #333; }
details > p { margin-left: 1rem; }
.gallery { display: flex; flex-wrap: wrap; gap: .8rem; }
.gallery figure { flex: 1 1 30rem; max-width: 48%; margin: .4rem 0; }
.gallery figure.wide { max-width: 100%; flex-basis: 100%; }
ul.findings { padding-left: 1.2rem; } li.finding { margin: .3rem 0; max-width: 60rem; }
.lead { font-size: 1.05rem; }
table.glance { font-size: .95rem; } table.glance th { text-align: left; white-space: nowrap; }
table.glance td { max-width: 40rem; } table.glance td.link { white-space: nowrap; font-size: .85rem; }
"""


def format_cell(column: str, value: object) -> str:
    """A table cell as text: counts as integers, other numbers with 3 decimals, NaN as n/a."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return MISSING
    if isinstance(value, bool | numbers.Integral):
        return str(value)
    if isinstance(value, numbers.Real) and column.startswith("n_") and float(value).is_integer():
        return str(int(value))
    if isinstance(value, numbers.Real) and column.endswith("p_value") and 0 <= float(value) < 0.001:
        return "< 0.001"
    if isinstance(value, numbers.Real):
        return f"{float(value):.3f}"
    return str(value)


def render_markdown(title: str, sections: Sequence[Section]) -> str:
    """The whole report as Markdown (figures are only in the HTML report)."""
    lines = [f"# {markdown_text(title)}", ""]
    for section in sections:
        lines += _markdown_section(section, level=2)
    return "\n".join(lines).rstrip() + "\n"


def render_html(title: str, sections: Sequence[Section]) -> str:
    """The whole report as one HTML page: inline CSS, figures as base64 PNG, no links out."""
    anchors = section_anchors(sections)
    body = [f"<h1>{html.escape(title)}</h1>", _html_contents(sections, anchors)]
    for section in sections:
        body.append(_html_section(section, level=2, anchors=anchors))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def section_anchors(sections: Sequence[Section]) -> dict[int, str]:
    """``id(section) -> anchor`` for every section: its parents' anchors and its own title, unique."""
    anchors: dict[int, str] = {}
    used: set[str] = set()

    def visit(section: Section, parent: str | None) -> None:
        base = _anchor(section.title) if parent is None else f"{parent}-{_anchor(section.title)}"
        anchor, counter = base, 2
        while anchor in used:
            anchor, counter = f"{base}-{counter}", counter + 1
        used.add(anchor)
        anchors[id(section)] = anchor
        for sub in section.subsections:
            visit(sub, anchor)

    for section in sections:
        visit(section, None)
    return anchors


def _markdown_section(section: Section, level: int) -> list[str]:
    lines = [f"{'#' * level} {markdown_text(section.title)}", ""]
    for block in section.blocks:
        lines += _markdown_block(block)
    for subsection in section.subsections:
        lines += _markdown_section(subsection, level + 1)
    return lines


def _markdown_block(block: Block) -> list[str]:
    """One block as Markdown; its text is made literal (:func:`markdown_text`: no raw HTML)."""
    if isinstance(block, Paragraph):
        return [markdown_text(block.text), ""]
    if isinstance(block, Finding):
        where = f" (see '{markdown_text(block.target.title)}')" if block.target is not None else ""
        return [f"- {markdown_text(block.text)}{where}", ""]
    if isinstance(block, Table) and not block.csv_only:
        return [f"**{markdown_text(block.caption)}** (`{block.name}.csv`)", "", *_markdown_table(block.shown), ""]
    if isinstance(block, Figure):
        return [f"*Figure: {markdown_text(block.caption)} (see report.html).*", ""] if block.image() is not None else []
    if isinstance(block, Gallery):
        return [line for figure in block.figures for line in _markdown_block(figure)]
    if isinstance(block, Details):
        inner = [line for item in block.blocks for line in _markdown_block(item)]
        return [f"**{markdown_text(block.summary)}**", "", *inner]
    if isinstance(block, GlanceTable):
        frame = pd.DataFrame(
            [(g.topic, _glance_subject(g), g.answer, target.title if target else "") for g, target in block.rows],
            columns=["", "what", "answer", "section"],
        )
        return [f"**{markdown_text(block.caption)}**", "", *_markdown_table(frame), ""]
    return []


def _glance_subject(glance: object) -> str:
    if not glance.cell or glance.cell == TOTAL_LABEL:  # the pooled cell: the table's caption says so
        return glance.subject
    return f"{glance.subject} ({glance.cell})"


def _markdown_table(frame: pd.DataFrame) -> list[str]:
    columns = [str(column) for column in frame.columns]
    header = "| " + " | ".join(_markdown_escape(column) for column in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    rows = [
        "| " + " | ".join(_markdown_escape(format_cell(c, v)) for c, v in zip(columns, row, strict=True)) + " |"
        for row in frame.itertuples(index=False, name=None)
    ]
    return [header, rule, *rows]


def _markdown_escape(text: str) -> str:
    return markdown_text(text).replace("|", "\\|").replace("\n", " ")


def _html_contents(sections: Sequence[Section], anchors: dict[int, str]) -> str:
    """A compact table of contents: one line per top section, its subsections inline."""
    items = []
    for section in sections:
        children = " · ".join(
            f'<a href="#{anchors[id(sub)]}">{html.escape(sub.title)}</a>' for sub in section.subsections
        )
        nested = f'<span class="sub">{children}</span>' if children else ""
        items.append(f'<li><a href="#{anchors[id(section)]}"><b>{html.escape(section.title)}</b></a> {nested}</li>')
    return '<nav><ul class="contents">' + "".join(items) + "</ul></nav>"


def _html_section(section: Section, level: int, anchors: dict[int, str]) -> str:
    anchor = anchors[id(section)]
    parts = [f'<section id="{anchor}">', f"<h{level}>{html.escape(section.title)}</h{level}>"]
    findings: list[str] = []
    for block in section.blocks:
        if isinstance(block, Finding):
            findings.append(_html_block(block, anchors))
            continue
        if findings:
            parts.append('<ul class="findings">' + "".join(findings) + "</ul>")
            findings = []
        parts.append(_html_block(block, anchors))
    if findings:
        parts.append('<ul class="findings">' + "".join(findings) + "</ul>")
    for subsection in section.subsections:
        parts.append(_html_section(subsection, min(level + 1, 6), anchors))
    parts.append("</section>")
    return "\n".join(part for part in parts if part)


def _html_block(block: Block, anchors: dict[int, str]) -> str:
    if isinstance(block, Paragraph):
        return f"<p>{html.escape(block.text)}</p>"
    if isinstance(block, Finding):
        link = ""
        if block.target is not None and id(block.target) in anchors:
            link = f' <a href="#{anchors[id(block.target)]}">{html.escape(block.target.title)} &rarr;</a>'
        return f'<li class="finding">{html.escape(block.text)}{link}</li>'
    if isinstance(block, Table) and not block.csv_only:
        return _html_table(block)
    if isinstance(block, Figure):
        return _html_figure(block)
    if isinstance(block, Gallery):
        return '<div class="gallery">' + "".join(_html_figure(figure) for figure in block.figures) + "</div>"
    if isinstance(block, Details):
        inner = "\n".join(_html_block(inner, anchors) for inner in block.blocks)
        return (
            f"<details{' open' if block.open else ''}><summary>{html.escape(block.summary)}</summary>\n"
            f"{inner}</details>"
        )
    if isinstance(block, GlanceTable):
        return _html_glance(block, anchors)
    return ""


def _html_glance(block: GlanceTable, anchors: dict[int, str]) -> str:
    """The front page's summary: topic (once per run of rows), what, answer, a link to the section."""
    rows, previous = [], None
    for glance, target in block.rows:
        topic = html.escape(glance.topic) if glance.topic != previous else ""
        previous = glance.topic
        link = ""
        if target is not None and id(target) in anchors:
            link = f'<a href="#{anchors[id(target)]}">{html.escape(target.title)} &rarr;</a>'
        rows.append(
            f'<tr><th scope="row">{topic}</th><td>{html.escape(_glance_subject(glance))}</td>'
            f'<td>{html.escape(glance.answer)}</td><td class="link">{link}</td></tr>'
        )
    return (
        f'<div class="scroll"><table class="glance"><caption>{html.escape(block.caption)}</caption>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _html_figure(figure: Figure) -> str:
    png = figure.image()
    if png is None:
        return ""
    encoded = base64.b64encode(png).decode("ascii")
    caption = html.escape(figure.caption)
    wide = ' class="wide"' if _aspect(png) > WIDE_ASPECT else ""
    return (
        f'<figure{wide}><img src="data:image/png;base64,{encoded}" alt="{caption}">'
        f"<figcaption>{caption}</figcaption></figure>"
    )


WIDE_ASPECT = 2.2  # a figure wider than this (width / height) takes the gallery's whole width


def _aspect(png: bytes) -> float:
    """Width / height from the PNG header (1 when it cannot be read)."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        return 1.0
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    return width / height if height else 1.0


def _html_table(table: Table) -> str:
    columns = [str(column) for column in table.shown.columns]
    header = "".join(f"<th>{html.escape(column)}</th>" for column in columns)
    rows = []
    for row in table.shown.itertuples(index=False, name=None):
        cells = []
        for column, value in zip(columns, row, strict=True):
            numeric = (isinstance(value, numbers.Real) and not isinstance(value, bool)) or (
                isinstance(value, str) and NUMBER_TEXT.fullmatch(value) is not None
            )
            css = ' class="number"' if numeric else ""
            cells.append(f"<td{css}>{html.escape(format_cell(column, value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"{html.escape(table.caption)} <small>({html.escape(table.name)}.csv)</small>"
    return (
        f'<div class="scroll"><table><caption>{caption}</caption><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _anchor(title: str) -> str:
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    slug = "".join(ch.lower() if ch.isalnum() else "-" for ch in ascii_title)
    return "-".join(part for part in slug.split("-") if part) or "section"
