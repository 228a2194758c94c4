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

from judgelab.analysis.report.blocks import Figure, Paragraph, Section, Table
from judgelab.analysis.report.safe_text import markdown_text

MISSING = "n/a"
NUMBER_TEXT = re.compile(r"-?\d+(\.\d+)?%?|-?\d+(\.\d+)?–-?\d+(\.\d+)?")  # 3.12, 45%, 0.41–0.73
HTML_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 70rem; margin: 2rem auto; padding: 0 1rem;
       line-height: 1.45; color: #222; }
h1, h2, h3 { line-height: 1.2; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2.5rem; }
table { border-collapse: collapse; margin: .8rem 0; font-size: .92rem; }
caption { text-align: left; font-weight: 600; padding-bottom: .3rem; }
th, td { border: 1px solid #ddd; padding: .25rem .6rem; vertical-align: top; }
th { background: #f3f3f3; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
figure { margin: 1rem 0; } figcaption { font-size: .9rem; color: #555; }
img { max-width: 100%; }
nav ul { padding-left: 1.2rem; }
.scroll { overflow-x: auto; max-width: 100%; }
h3 { margin-top: 2rem; } h4 { margin-top: 1.5rem; color: #333; }
p { max-width: 60rem; }
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
    body = [f"<h1>{html.escape(title)}</h1>", _html_contents(sections)]
    for section in sections:
        body.append(_html_section(section, level=2, anchor=_anchor(section.title)))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{html.escape(title)}</title>\n<style>{HTML_STYLE}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _markdown_section(section: Section, level: int) -> list[str]:
    lines = [f"{'#' * level} {markdown_text(section.title)}", ""]
    for block in section.blocks:
        if isinstance(block, Paragraph):
            lines += [markdown_text(block.text), ""]
        elif isinstance(block, Table) and not block.csv_only:
            lines += [
                f"**{markdown_text(block.caption)}** (`{block.name}.csv`)",
                "",
                *_markdown_table(block.shown),
                "",
            ]
        elif isinstance(block, Figure):
            lines += [f"*Figure: {markdown_text(block.caption)} (see report.html).*", ""]
    for subsection in section.subsections:
        lines += _markdown_section(subsection, level + 1)
    return lines


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


def _html_contents(sections: Sequence[Section]) -> str:
    items = []
    for section in sections:
        anchor = _anchor(section.title)
        children = "".join(
            f'<li><a href="#{anchor}-{_anchor(sub.title)}">{html.escape(sub.title)}</a></li>'
            for sub in section.subsections
        )
        nested = f"<ul>{children}</ul>" if children else ""
        items.append(f'<li><a href="#{anchor}">{html.escape(section.title)}</a>{nested}</li>')
    return "<nav><h2>Contents</h2><ul>" + "".join(items) + "</ul></nav>"


def _html_section(section: Section, level: int, anchor: str) -> str:
    parts = [f'<section id="{anchor}">', f"<h{level}>{html.escape(section.title)}</h{level}>"]
    for block in section.blocks:
        if isinstance(block, Paragraph):
            parts.append(f"<p>{html.escape(block.text)}</p>")
        elif isinstance(block, Table) and not block.csv_only:
            parts.append(_html_table(block))
        elif isinstance(block, Figure):
            encoded = base64.b64encode(block.png).decode("ascii")
            caption = html.escape(block.caption)
            parts.append(
                f'<figure><img src="data:image/png;base64,{encoded}" alt="{caption}">'
                f"<figcaption>{caption}</figcaption></figure>"
            )
    for subsection in section.subsections:
        child_anchor = f"{anchor}-{_anchor(subsection.title)}"
        parts.append(_html_section(subsection, min(level + 1, 6), child_anchor))
    parts.append("</section>")
    return "\n".join(parts)


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
