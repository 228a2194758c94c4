"""Prompt templates: where they live, how they are rendered, how their version is computed.

A schema's template is a plain text file next to its config (``configs/<schema>/prompt.txt``,
named in ``schema.yaml`` under ``prompt:``). ``$JUDGELAB_PROMPTS_DIR/<schema>/<file>`` takes
precedence, so a user can change a prompt without touching the repository or the code.

Placeholders are ``{name}`` with ``name`` an identifier (``{summary}``, ``{data}``). Rendering
is one pass of plain substitution: no attribute access, no format specs, no code. Everything
else stays as written, so JSON examples (``{"annotations": [...]}``) and sets like
``{0, 1, 2}`` need no escaping, and an unknown placeholder stays visible in the prompt
instead of failing::

    >>> render('Summary: {summary} -> {"annotations": []} {unknown}', {"summary": "By the sea."})
    'Summary: By the sea. -> {"annotations": []} {unknown}'
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROMPTS_DIR_ENV = "JUDGELAB_PROMPTS_DIR"
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class PromptError(ValueError):
    """A prompt template is missing or a prompt option in ``schema.yaml`` is wrong."""


@dataclass(frozen=True)
class PromptTemplate:
    text: str
    path: Path | None  # where it was read from (None: built into the code)

    def render(self, values: Mapping[str, Any]) -> str:
        return render(self.text, values)


def as_prompt_text(value: Any) -> str:
    """How a task value reads in a prompt: ``None`` -> "", ``3.0`` -> "3", lists one per line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return str(int(value)) if value == int(value) else str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return "\n".join(as_prompt_text(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def render(template: str, values: Mapping[str, Any]) -> str:
    """Replace each ``{name}`` whose name is in ``values``; leave everything else as it is.

    Substituted values are never scanned again, so a task text containing ``{summary}`` stays
    literal. Trailing whitespace of the template (a file's final newline) is dropped.
    """

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        return as_prompt_text(values[name]) if name in values else match.group(0)

    return _PLACEHOLDER.sub(substitute, template).rstrip()


def placeholders(template: str) -> list[str]:
    """The placeholder names a template uses, in order of first use."""
    return list(dict.fromkeys(_PLACEHOLDER.findall(template)))


def prompts_override_dir() -> Path | None:
    env = os.environ.get(PROMPTS_DIR_ENV)
    return Path(env) if env else None


def find_template(schema_name: str, file_name: str, folder: Path | None) -> PromptTemplate | None:
    """``$JUDGELAB_PROMPTS_DIR/<schema>/<file>`` if it exists, else ``<folder>/<file>``, else None."""
    if Path(file_name).name != file_name or file_name in ("", ".", ".."):
        raise PromptError(f"prompt file name must be a plain file name, got {file_name!r}")
    candidates = []
    override = prompts_override_dir()
    if override is not None:
        candidates.append(override / schema_name / file_name)
    if folder is not None:
        candidates.append(folder / file_name)
    for path in candidates:
        if path.is_file():
            return PromptTemplate(text=path.read_text(encoding="utf-8"), path=path)
    return None


def load_template(schema_name: str, file_name: str, folder: Path | None) -> PromptTemplate:
    """Like :func:`find_template`, but a missing file is an error."""
    found = find_template(schema_name, file_name, folder)
    if found is None:
        where = [str(p / schema_name / file_name) for p in filter(None, [prompts_override_dir()])]
        if folder is not None:
            where.append(str(folder / file_name))
        raise PromptError(f"prompt template for {schema_name!r} not found (looked in {', '.join(where) or 'nowhere'})")
    return found


def short_hash(*parts: Any, size: int = 12) -> str:
    """A stable short hash of strings and JSON-able values (dicts hashed with sorted keys)."""
    digest = hashlib.sha256()
    for part in parts:
        text = part if isinstance(part, str) else json.dumps(part, sort_keys=True, ensure_ascii=False, default=str)
        digest.update(text.encode("utf-8"))
        digest.update(b"\x00")
    return digest.hexdigest()[:size]
