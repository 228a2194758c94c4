"""The ``judgelab`` command lines the README and the manual (``docs/**/*.md``) show (every fenced
code block), for the tests that run them exactly as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```")
COMMAND = re.compile(r"(?:^|[\s/])judgelab(?:\s|$)")


def _without_comment(line: str) -> str:
    """The line up to a ``#`` comment that is outside quotes."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in ("'", '"'):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _blocks(text: str) -> list[tuple[str, list[str]]]:
    """(the line before the block, the block's logical lines) for every fenced block."""
    blocks, current, before, previous = [], None, "", ""
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            if current is None:
                current, before = [], previous
            else:
                blocks.append((before, current))
                current = None
            continue
        if current is None:
            previous = line if line.strip() else previous
        elif current and current[-1].endswith("\\"):
            current[-1] = current[-1][:-1].rstrip() + " " + line.strip()
        else:
            current.append(line)
    return blocks


def pages() -> list[Path]:
    """The README and every Markdown page of the manual, the README first."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def page_text(name: str) -> str:
    """One page of the manual, by its path under ``docs/`` (``"backend.md"``)."""
    return (DOCS / name).read_text(encoding="utf-8")


def docs_text() -> str:
    """The README and the manual's pages, one after the other (a blank line between)."""
    return "\n\n".join(path.read_text(encoding="utf-8") for path in pages())


def command_lines(text: str | None = None) -> list[str]:
    """Every ``judgelab`` command line of the code blocks of the README and the manual (or of
    ``text``), comments stripped."""
    if text is None:
        return [line for path in pages() for line in command_lines(path.read_text(encoding="utf-8"))]
    lines = []
    for _, block in _blocks(text):
        for line in block:
            command = _without_comment(line.strip())
            if COMMAND.search(command):
                lines.append(command)
    return lines


def block_after(marker: str) -> list[str]:
    """The command lines of the code block right after ``<!-- marker -->``, in the README or a page
    of the manual."""
    for path in pages():
        for before, block in _blocks(path.read_text(encoding="utf-8")):
            if marker in before:
                return [_without_comment(line.strip()) for line in block if line.strip()]
    raise AssertionError(f"neither README.md nor docs/ has a code block after <!-- {marker} -->")
