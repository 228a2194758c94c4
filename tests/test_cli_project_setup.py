"""Setting up a study's projects against a real Label Studio: the overlap given where projects are
created and imported; instructions an earlier judgelab wrote as <pre> text made HTML; a mistyped
title (a hyphen for an en dash, lower case, no accents) answered with the project it nearly names,
never acted on and never duplicated."""

from __future__ import annotations

import json
import re
import shlex

import pytest
from click.testing import CliRunner

from judgelab.configs.schema import get_schema
from judgelab.sync.cli import main
from judgelab.sync.projects import title_key

pytestmark = pytest.mark.integration
TITLE = "Noticias Q4 – resúmenes LLM"  # an en dash, as the PM's spreadsheet had it


def cli(stack, *args: str):
    environ = {
        "JUDGELAB_LS_URL": stack.url,
        "JUDGELAB_LS_TOKEN": stack.creds.token,
        "JUDGELAB_BACKEND_URL": stack.backend_url,
    }
    result = CliRunner().invoke(main, list(args), env=environ)
    assert "Traceback" not in result.output, result.output
    return result


def likert_csv(path, n: int, prefix: str):
    lines = ["id,title,article,summary,model"]
    lines += [f"{prefix}-{i},Titular {i},El pleno aprobó el plan {i}.,Se aprueba el plan {i}.,gpt-4o" for i in range(n)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def titles(client) -> list[str]:
    return sorted(p.title for p in client.projects.list())


def test_overlap_is_set_where_projects_are_created_and_imported(live_stack, tmp_path):
    client = live_stack.client
    made = cli(live_stack, "create", "--title", "Hotel pilot", "--schema", "hotel_spans", "--overlap", "3", "--json")
    assert made.exit_code == 0, made.output
    (entry,) = json.loads(made.stdout)["projects"]
    assert entry["overlap"] == {"annotations_per_task": 3, "percent": 100}
    project = client.projects.get(id=entry["id"])
    assert (project.maximum_annotations, project.overlap_cohort_percentage) == (3, 100)

    csv = likert_csv(tmp_path / "n.csv", 4, "ov")
    imported = cli(live_stack, "import", "--title", "Rated twice", "--schema", "likert_rubric_es", str(csv),
                   "--overlap", "2")  # fmt: skip
    assert imported.exit_code == 0, imported.output
    assert "'Rated twice': 2 annotation(s) per task on 100% of tasks" in imported.output
    (rated,) = [p for p in client.projects.list() if p.title == "Rated twice"]
    assert client.projects.get(id=rated.id).maximum_annotations == 2
    again = cli(live_stack, "import", "--title", "Rated twice", str(csv))  # without --overlap: unchanged
    assert again.exit_code == 0 and "annotation(s) per task" not in again.output
    assert client.projects.get(id=rated.id).maximum_annotations == 2
    default = cli(live_stack, "create", "--title", "Rated once", "--schema", "likert_rubric_es", "--json")
    (once,) = json.loads(default.stdout)["projects"]
    assert client.projects.get(id=once["id"]).maximum_annotations == 1 and "overlap" not in once
    refused = cli(live_stack, "create", "--title", "Rated none", "--schema", "likert_rubric_es", "--overlap", "0")
    assert refused.exit_code == 2 and "Rated none" not in titles(client)


def test_title_keys():
    import doctest

    from judgelab.sync import projects

    assert doctest.testmod(projects).failed == 0
    assert title_key("Noticias Q4 \u2014 resúmenes\tLLM ") == title_key("NOTICIAS q4 - RESUMENES llm")
    assert title_key("Noticias Q3 – resúmenes LLM") != title_key("Noticias Q4 – resúmenes LLM")


def test_a_mistyped_title_is_answered_with_the_project_it_nearly_names(live_stack, tmp_path):
    client = live_stack.client
    made = cli(live_stack, "create", "--title", TITLE, "--schema", "likert_rubric_es")
    assert made.exit_code == 0, made.output
    cli(live_stack, "create", "--title", "Hoteles 2025", "--schema", "hotel_spans")
    (project,) = [p for p in client.projects.list() if p.title == TITLE]
    for typed in ("Noticias Q4 - resúmenes LLM", "noticias q4 – resúmenes llm", "NOTICIAS Q4 -  resumenes LLM"):
        result = cli(live_stack, "connect", "--title", typed)
        assert result.exit_code == 1, typed
        assert f"no project {typed!r} in Label Studio; did you mean {TITLE!r} (project {project.id})?" in result.output
        assert "reads the same but for case, accents, dashes or spaces" in result.output
        assert "Hoteles 2025" not in result.output  # no listing of every project
        # the command suggested works as printed
        suggested = re.search(r"give (--title .+?) or --project", result.output).group(1)
        assert cli(live_stack, "connect", *shlex.split(suggested)).exit_code == 0

    close = cli(live_stack, "sync", "--title", "Noticias Q3 - resúmenes LLM", "--out", str(tmp_path / "d"))
    assert (
        close.exit_code == 1
        and f"did you mean {TITLE!r} (project {project.id})? (close to the title given" in close.output
    )
    unrelated = cli(live_stack, "connect", "--title", "Something else entirely")
    assert unrelated.exit_code == 1 and "(projects:" in unrelated.output and "did you mean" not in unrelated.output

    # creating a project whose title reads the same as one there is refused: nobody could tell them apart
    before = titles(client)
    csv = likert_csv(tmp_path / "q4.csv", 3, "q4")
    twin = cli(live_stack, "import", "--title", "noticias q4 - resumenes llm", "--schema", "likert_rubric_es", str(csv))
    assert twin.exit_code == 1 and "so none was created; did you mean" in twin.output
    assert titles(client) == before and client.projects.get(id=project.id).task_number == 0
    # a title that is only close is another study: created
    other = cli(live_stack, "create", "--title", "Noticias Q3 – resúmenes LLM", "--schema", "likert_rubric_es")
    assert other.exit_code == 0 and "created" in other.output


def test_instructions_an_earlier_judgelab_wrote_as_pre_text_become_html_and_edited_ones_stay(live_stack):
    client = live_stack.client
    schema = get_schema("hotel_spans")
    written = schema.meta["instructions"]
    old = client.projects.create(title="Hoteles (2024)", label_config=schema.config_xml,
                                 description=f"[judgelab:{schema.name}] [judgelab-title:Hoteles (2024)]",
                                 expert_instruction=f"<pre>{written}</pre>")  # fmt: skip
    edited = client.projects.create(title="Hoteles (editado)", label_config=schema.config_xml,
                                    description=f"[judgelab:{schema.name}] [judgelab-title:Hoteles (editado)]",
                                    expert_instruction="<p>Our own words</p>")  # fmt: skip
    result = cli(live_stack, "create", "--project", str(old.id), "--project", str(edited.id))
    assert result.exit_code == 0, result.output
    assert f"project {old.id} 'Hoteles (2024)' exists, its instructions now shown as HTML" in result.output
    assert client.projects.get(id=old.id).expert_instruction.startswith('<div class="judgelab-instructions">')
    assert client.projects.get(id=edited.id).expert_instruction == "<p>Our own words</p>"
    again = cli(live_stack, "create", "--project", str(old.id))
    assert "now shown as HTML" not in again.output
