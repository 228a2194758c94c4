"""Every dotted name of judgelab's own in the prose (``judgelab.sync.tidy``, ``analysis.qc.hotel_spans``,
``sync.state_folder.folder_lock``) names something that exists: a module, a folder of the package, or
an attribute of a module. Checked in the docstrings and comments of the four packages and in
README.md and ARCHITECTURE.md, so a renamed module does not leave its old name behind."""

from __future__ import annotations

import ast
import importlib
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("configs", "backend", "sync", "analysis")
DOTTED = re.compile(r"(?<![\w./-])(?:judgelab\.)?(?:configs|backend|sync|analysis)(?:\.[A-Za-z_]\w*)+")


def prose_of(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the docstrings and comments of a module; a Markdown file whole."""
    source = path.read_text(encoding="utf-8")
    if path.suffix == ".md":
        return list(enumerate(source.splitlines(), 1))
    found = [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    found.append((body[0].lineno, body[0].value.value))
    return found


def resolves(name: str) -> bool:
    parts = name.removeprefix("judgelab.").split(".")
    for k in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:k])
        is_module = base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()
        if not is_module and not base.is_dir():
            continue
        rest = parts[k:]
        if not rest:
            return True
        if not is_module:  # a schema folder's file is not a module with attributes
            return False
        value = importlib.import_module("judgelab." + ".".join(parts[:k]))
        for attribute in rest:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def sources() -> list[Path]:
    return [ROOT / "README.md", ROOT / "ARCHITECTURE.md"] + [
        path
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if "__pycache__" not in path.parts
    ]


def test_every_dotted_name_in_the_prose_exists():
    stale = sorted(
        f"{path.relative_to(ROOT)}:{line + offset}: {name}"
        for path in sources()
        for line, text in prose_of(path)
        for offset, text_line in enumerate(text.splitlines())
        for name in (m.group(0).rstrip(".") for m in DOTTED.finditer(text_line))
        if not name.endswith((".py", ".yaml", ".json")) and not resolves(name)
    )
    assert not stale, "names of judgelab's that no longer exist:\n" + "\n".join(stale)


@pytest.mark.parametrize(
    ("name", "exists"),
    [
        ("judgelab.sync.state_folder.folder_lock", True),
        ("analysis.qc.hotel_spans", True),
        ("configs.story_consistency", True),  # a schema folder
        ("analysis.qc_hotel", False),
        ("analysis.report_rendering", False),
        ("sync.state_folder.no_such_function", False),
    ],
)
def test_the_check_tells_existing_names_from_stale_ones(name, exists):
    assert resolves(name) is exists
