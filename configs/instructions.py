"""A schema's instructions (``schema.yaml``'s plain text) as the HTML of Label Studio's
"Instructions" pop-up (a project's ``expert_instruction``, which Label Studio renders as HTML).

The text is written as people write a note: paragraphs separated by a blank line, lines wrapped
by hand, numbered (``1.``) or bulleted (``-``, ``*``) items whose continuation lines are indented.
Wrapped lines are joined (the pop-up wraps them to its own width), items become a list, and the
text is escaped, so that ``<`` or ``&`` in it shows as written.

>>> shown = instructions_html("Read the post.\\nThen the summary.\\n\\n1. Mark spans\\n   that are wrong.\\n2. <none>")
>>> print(re.sub(r"<style>.*</style>", "", shown).replace("><", ">\\n<"))
<div class="judgelab-instructions">
<p>Read the post. Then the summary.</p>
<ol>
<li>Mark spans that are wrong.</li>
<li>&lt;none&gt;</li>
</ol>
</div>
"""

from __future__ import annotations

import html
import re

_ITEM = re.compile(r"^\s*(?:(\d+)[.)]|[-*\u2022])\s+(.*)$")
# The pop-up is a modal of Label Studio's page, whose style sheet resets lists (no numbers, no
# bullets, no indent) and paragraph margins. Label Studio keeps a ``<style>`` element and ``class``
# attributes of the instructions but drops ``style`` attributes (bleach, SAFE_HTML_TAGS and
# SAFE_HTML_ATTRIBUTES of its constants.py), so the few rules that make them readable come in a
# style element scoped to the instructions' own class.
CLASS = "judgelab-instructions"
STYLE = (
    f".{CLASS} {{ white-space: normal; line-height: 1.5; }} "
    f".{CLASS} p, .{CLASS} ol, .{CLASS} ul {{ margin: 0 0 0.6em 0; }} "
    f".{CLASS} ol {{ list-style: decimal; padding-left: 1.6em; }} "
    f".{CLASS} ul {{ list-style: disc; padding-left: 1.6em; }}"
)
OPENING = f'<div class="{CLASS}"><style>{STYLE}</style>'


def instructions_html(text: str) -> str:
    """``text`` as HTML: ``<p>`` per paragraph, ``<ol>``/``<ul>`` for numbered or bulleted items."""
    parts: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        parts.extend(_block_html(block.splitlines()))
    return OPENING + "".join(parts) + "</div>"


def _block_html(lines: list[str]) -> list[str]:
    out: list[str] = []
    paragraph: list[str] = []
    items: list[list[str]] = []
    numbered = False

    def flush_paragraph() -> None:
        if paragraph:
            out.append(f"<p>{html.escape(' '.join(paragraph))}</p>")
            paragraph.clear()

    def flush_items() -> None:
        if items:
            shown = "".join(f"<li>{html.escape(' '.join(item))}</li>" for item in items)
            tag = "ol" if numbered else "ul"
            out.append(f"<{tag}>{shown}</{tag}>")
            items.clear()

    for line in lines:
        item = _ITEM.match(line)
        if item:
            flush_paragraph()
            if items and numbered != bool(item.group(1)):
                flush_items()
            numbered = bool(item.group(1))
            items.append([item.group(2).strip()])
        elif items and line[:1].isspace():  # an item's continuation line
            items[-1].append(line.strip())
        elif line.strip():
            flush_items()
            paragraph.append(line.strip())
    flush_paragraph()
    flush_items()
    return out
