"""The importers' package: seed formats register themselves and nothing names them all (no import
cycle: tests/test_architecture.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from judgelab.configs.schema import all_schemas
from judgelab.sync.cli import main
from judgelab.sync.importers.registry import IMPORTERS

ROOT = Path(__file__).resolve().parents[1]


def test_every_seed_format_registers_itself_with_an_existing_schema():
    assert IMPORTERS.names() == ["basse", "hotel", "storysumm", "wide-augmentation"]
    schemas = all_schemas()
    for name, importer in IMPORTERS.items():
        assert importer.name == name and importer.schema in schemas
    help_text = CliRunner().invoke(main, ["import", "--help"]).output
    assert "[auto|generic|basse|hotel|storysumm|wide-augmentation]" in help_text


def test_a_schema_folder_brings_its_own_import_format(tmp_path):
    """A sixth format is one file: configs/<schema>/importer.py registers it; --format and detection see it."""
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs" / "likert_rubric_es", configs / "likert_rubric_es")
    (configs / "likert_rubric_es" / "importer.py").write_text(
        """
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.registry import IMPORTERS
from judgelab.sync.importers.rows import checked_rows


@IMPORTERS.register("noticias", schema="likert_rubric_es", detect=lambda first: "noticia" in first)
def read(path, schema, *, skip_bad=False):
    records = [(w, {"article": r["noticia"], "summary": r["resumen"]}) for w, r in read_records(path)]
    return checked_rows(records, schema, skip_bad=skip_bad)
""",
        encoding="utf-8",
    )
    data = tmp_path / "noticias.csv"
    data.write_text("noticia,resumen\nUna noticia larga.,Un resumen.\n", encoding="utf-8")
    script = (
        "from judgelab.sync.importers import format_names, read_tasks\n"
        f"schema, rows = read_tasks({str(data)!r}, None)\n"
        "print(format_names(), schema.name, [r.data['summary'] for r in rows])\n"
    )
    env = {**os.environ, "JUDGELAB_CONFIGS_DIR": str(configs)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stdout
    assert "'noticias'" in out and "likert_rubric_es ['Un resumen.']" in out
    help_text = subprocess.run(
        [sys.executable, "-c", "from judgelab.sync.cli import main; main()", "import", "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "noticias" in help_text
