"""Report text that other tools open: spreadsheets run CSV cells as formulas, Markdown renderers
run inline HTML. Data in the report (model versions, annotator emails, task fields) is made inert.

- CSV: a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is
  written with a leading apostrophe (``'=SUM(A1)``), which spreadsheets show as text and never
  evaluate (OWASP's advice on CSV injection); a cell that is a plain number (``-0.25``) is kept.
- Markdown: ``<`` that could open an HTML tag or comment is written ``&lt;``, ``&`` that could
  start an entity ``&amp;``; the text reads the same once rendered.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_TAG = re.compile(r"<(?=[A-Za-z/!?])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def spreadsheet_cell(value: object) -> object:
    """``value``, with a leading apostrophe when it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_START) and not _is_number(value):
        return "'" + value
    return value


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells are safe to open in a spreadsheet (and its header)."""
    out = frame.copy()
    for column in out.columns:
        values = out[column]
        if not (pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values)):
            continue
        if isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype) and not _any_formula(values):
            out[column] = values.astype(object)  # text only, none starting like a formula: nothing to change
            continue
        out[column] = values.map(spreadsheet_cell).astype(object)
    out.columns = [spreadsheet_cell(str(c)) if isinstance(c, str) else c for c in out.columns]
    return out


def _any_formula(values: pd.Series) -> bool:
    """Whether some text of a string column starts like a formula (a vectorised first look)."""
    return bool(values.str.startswith(FORMULA_START).fillna(False).any())


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """``frame`` as CSV at ``path``, its text made spreadsheet-safe."""
    spreadsheet_safe(frame).to_csv(path, index=False)
    return Path(path)


def markdown_text(text: str) -> str:
    """``text`` with what a Markdown renderer would take as HTML made literal."""
    return _TAG.sub("&lt;", _ENTITY.sub("&amp;", text))
