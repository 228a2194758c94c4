"""The architecture's rules, checked on the source:

- which of judgelab's packages may import which (``configs`` is the schema core and imports none of
  the others; ``backend`` and ``analysis`` import only ``configs``; ``sync`` imports ``configs`` and
  ``analysis``, and reaches the backend over HTTP or as a process, never by import) and no import
  cycles: import-linter's contracts in pyproject.toml (``[tool.importlinter]``). Its graph (grimp)
  counts every import statement, function-level ones included, and leaves out those under
  ``if TYPE_CHECKING:``;
- no hand-kept list names every schema: per-schema code registers itself (configs.plugins);
- a schema's words (labels, item values, item patterns, named constants) live in its folder: the other
  layers ask the ``Schema`` (``python tests/test_architecture.py`` lists any spelled outside ``configs/``).
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("configs", "backend", "sync", "analysis")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _package_tree(where: Path, copied: str | None = None) -> Path:
    """A folder holding ``judgelab`` laid out as a built wheel installs it (grimp reads the files
    under the package's own folder, and the editable install's ``judgelab`` is one file pointing
    at the repository): the four packages linked, or ``copied`` copied so a test can plant a file."""
    package = where / "judgelab"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in PACKAGES:
        if name == copied:
            shutil.copytree(ROOT / name, package / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            (package / name).symlink_to(ROOT / name, target_is_directory=True)
    return package


def _lint_imports(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "COLUMNS": "1000"},  # one line per contract
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_import_contracts_are_kept(tmp_path):
    result = _lint_imports(_package_tree(tmp_path).parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


PLANTED = {
    # a function-level import counts as much as one at the top of a module (and configs importing
    # backend, which imports configs, also breaks the contract on cycles)
    "configs imports backend": (
        "configs",
        {"planted.py": "def f():\n    from judgelab.backend import model\n"},
        "configs is the schema core",
    ),
    "sync imports backend": (
        "sync",
        {"planted.py": "import judgelab.backend.results\n"},
        "sync never imports backend",
    ),
    "a cycle hidden in a function": (
        "analysis",
        {
            "planted_a.py": "from judgelab.analysis import planted_b\n",
            "planted_b.py": "def f():\n    from judgelab.analysis import planted_a\n",
        },
        "no import cycles",
    ),
}


@pytest.mark.parametrize("case", list(PLANTED))
def test_the_import_contracts_break_on_a_planted_import(tmp_path, case):
    folder, files, contract = PLANTED[case]
    package = _package_tree(tmp_path, copied=folder)
    for name, text in files.items():
        (package / folder / name).write_text(text)
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout + result.stderr
    broken = [line for line in result.stdout.splitlines() if " BROKEN" in line]
    assert any(contract in line for line in broken), result.stdout


@pytest.mark.parametrize(
    "package",
    ["backend", "sync", "analysis"],
)
def test_no_hand_kept_list_names_every_schema(package):
    """A literal that names all five built-in schemas is a dispatch table someone must keep; per-schema
    code registers itself instead (tests and docs may list them)."""
    schemas = {p.name for p in (ROOT / "configs").iterdir() if (p / "schema.yaml").exists()}
    offenders = []
    for path in sorted((ROOT / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Dict, ast.List, ast.Tuple, ast.Set)):
                elements = node.keys if isinstance(node, ast.Dict) else node.elts
                named = {e.value for e in elements if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if schemas <= named:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not offenders, "lists of every schema (register per schema instead): " + ", ".join(offenders)


# --- a schema's vocabulary lives in its folder ------------------------------------------------

# Words of a schema that are also the layers' own names for their own things: an HTTP answer's
# "error", a table's "reason" column, a JSON answer's "notes", "flags" of a model's answer, and the
# backend's "none_identified" (a draft's info and a tally's count when a model says there is nothing
# to mark). They are not counted as the schema's vocabulary.
GENERIC_WORDS = {"notes", "flags", "reason", "error", "none_identified"}

# Literals a layer may keep, each with its reason: a published data set's own field names and
# values in its loader are the data's, not the schema's ("*": any of the schemas' words).
_FITTED = "generated by a bench/fit_offline_*.py script from a published data set: keyed by the labels it was fitted on"
VOCABULARY_ALLOWED: dict[str, tuple[set[str], str]] = {
    "analysis/loaders/basse.py": (
        {"Coherence", "Consistency", "Fluency", "Relevance", "5W"},
        "BASSE's own rating keys in its files (mapped to the schema's criteria, which are asked of the schema)",
    ),
    "analysis/loaders/span_annotation.py": (
        {"line_"},
        "an annotator named after the line of the data file it comes from, not a line item",
    ),
    "analysis/loaders/storysumm.py": (
        {"faithful"},
        "StorySumm's label said in a problem message (1 = faithful), not the summary item",
    ),
    "backend/annotators/offline/fitted/hotel_spans.py": ({"*"}, _FITTED),
    "backend/annotators/offline/fitted/likert_rubric_es.py": ({"*"}, _FITTED),
    "backend/annotators/offline/fitted/summary_flaws.py": ({"*"}, _FITTED),
}


def _strings(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def schema_vocabulary(configs: Path = ROOT / "configs") -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The words and item patterns of every schema folder under ``configs``, each with the schemas
    that use it: the labels of its span controls, the values of its items and choices and its scales'
    labels, its item names, its ``constants``; a Repeater pattern (``line_{i}``) by its prefix.
    A data field's name is the data's column, not vocabulary."""
    words: dict[str, set[str]] = {}
    patterns: dict[str, set[str]] = {}
    for folder in sorted(p for p in configs.iterdir() if (p / "schema.yaml").exists()):
        meta = yaml.safe_load((folder / "schema.yaml").read_text(encoding="utf-8")) or {}
        fields = set(meta.get("data_fields") or {}) | set(meta.get("derived_fields") or {})
        found: set[str] = set()
        for control, spec in (meta.get("span_controls") or {}).items():
            spec = spec or {}
            found |= {control, *spec.get("labels", []), spec.get("note_control") or "", spec.get("field") or ""}
        for control, spec in (meta.get("items") or {}).items():
            spec = spec or {}
            found |= {control, spec.get("item") or "", spec.get("value") or "", *spec.get("values", [])}
        for spec in (meta.get("scales") or {}).values():
            found |= set(((spec or {}).get("labels") or {}).values())
        found |= set(_strings(meta.get("constants") or {}))
        for element in ET.fromstring((folder / "config.xml").read_text(encoding="utf-8")).iter():
            if element.get("toName"):
                found.add(element.get("name") or "")
            if element.tag in ("Label", "Choice") and not element.get("value", "").startswith("$"):
                found.add(element.get("value") or "")
        for word in found:
            if not isinstance(word, str) or not word:
                continue
            word = word.replace("{{idx}}", "{i}")
            if "{i}" in word:
                patterns.setdefault(word.split("{i}")[0], set()).add(folder.name)
            elif word not in fields and word not in GENERIC_WORDS:
                words.setdefault(word, set()).add(folder.name)
    return words, patterns


def vocabulary_literals(
    path: Path, words: Mapping[str, set[str]], patterns: Mapping[str, set[str]]
) -> list[tuple[int, str]]:
    """The string constants of ``path`` (docstrings aside) that are a schema's word, or a use of one
    of its item patterns as a whole string (``"line_"``, ``"line_{i}"``, ``r"^line_(\\d+)$"``)."""
    prefixes = "|".join(re.escape(p) for p in sorted(patterns, key=len, reverse=True))
    pattern_use = re.compile(rf"\^?(?:{prefixes})(?:[\d({{\[\\]\S*)?\$?") if prefixes else None
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            text = node.value
            if text in words or (pattern_use is not None and pattern_use.fullmatch(text)):
                found.append((node.lineno, text))
    return sorted(found)


def schema_literals_outside_configs() -> list[str]:
    words, patterns = schema_vocabulary()
    found = []
    for package in ("backend", "sync", "analysis"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            allowed = VOCABULARY_ALLOWED.get(where, (set(), ""))[0]
            for line, text in vocabulary_literals(path, words, patterns):
                if text not in allowed and "*" not in allowed:
                    found.append(f"{where}:{line}: {text!r}")
    return found


def test_a_schemas_words_are_asked_of_the_schema():
    """A label, an item's values, an item pattern or a named constant of a schema is written once, in
    its folder: the layers ask the ``Schema`` (``constant``, ``item_values``, ``items_of_kind``,
    ``control_labels``, ``item_control``, ``line_item_regex``) instead of spelling it."""
    found = schema_literals_outside_configs()
    assert not found, "a schema's words spelled outside configs/ (ask the Schema):\n" + "\n".join(found)


def test_the_vocabulary_check_finds_a_planted_literal(tmp_path):
    words, patterns = schema_vocabulary()
    assert {"Inconsistent", "error_free", "Coherence", "Not Checkable"} <= set(words)
    assert {"line_", "verdict_"} <= set(patterns)
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""Docstrings may say Inconsistent or line_3."""\n'
        'VERDICT = "Inconsistent"\n'
        'LINE = r"^line_(\\d+)$"\n'
        'NAME = f"verdict_{i}"\n'
        'PROSE = "line_agreement is a column; Inconsistent lines count"\n'
        'CHECK = "error_free"\n',
        encoding="utf-8",
    )
    assert vocabulary_literals(planted, words, patterns) == [
        (2, "Inconsistent"),
        (3, "^line_(\\d+)$"),
        (4, "verdict_"),
        (6, "error_free"),
    ]


# Constants that are the schema's own words and nowhere else in its folder, each with its reason.
CONSTANTS_OF_THEIR_OWN = {
    # the summary-level verdict published data sets give (StorySumm), which no control of the config asks
    "story_consistency": {"summary_item", "summary_faithful", "summary_unfaithful"},
}


def test_every_constant_is_one_of_its_schemas_words():
    """A schema's ``constants`` name its own labels, values, items and patterns (or data values such
    as the attention-check kinds): a constant that is none of them is a typo."""
    for folder in sorted(p for p in (ROOT / "configs").iterdir() if (p / "schema.yaml").exists()):
        meta = yaml.safe_load((folder / "schema.yaml").read_text(encoding="utf-8")) or {}
        known = set(_strings({k: v for k, v in meta.items() if k not in ("constants", "description", "instructions")}))
        known |= set(_strings(list((meta.get("items") or {}) | (meta.get("scales") or {}))))
        known |= set(_strings(list(meta.get("span_controls") or {})))
        for name, value in (meta.get("constants") or {}).items():
            if name in CONSTANTS_OF_THEIR_OWN.get(folder.name, set()):
                continue
            # a word, or a mapping to words (criteria by role; a model's names for a label), or a
            # mapping of words to what else they are called (whose keys are the words)
            named = [value] if isinstance(value, str) else list(value.values()) if isinstance(value, dict) else []
            if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
                named = list(value)
            for word in named:
                assert word in known, f"{folder.name}: constant {name} names {word!r}, none of the schema's words"


if __name__ == "__main__":  # the count and list of a schema's words written outside configs/
    listed = schema_literals_outside_configs()
    print("\n".join(listed))
    print(len(listed), "literal schema words outside configs/")
