"""Label Studio's "Instructions" pop-up shows a schema's instructions as readable HTML: wrapped
paragraphs and numbered lists in the page's own font, nothing cut at the right edge. Checked in
headless Chromium (Debian's package) on a project a PM created with a title of their own; the
screenshots go to test-artifacts/."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner
from test_browser_ui import CHROMIUM, FLAGS, log_in

from judgelab.configs.schema import get_schema
from judgelab.sync.cli import main

pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed"),
]

# what the pop-up shows: its lines of text, their font, wrapping and list markers, and their edges
SHOWN_JS = """(first) => {
  const start = [...document.querySelectorAll('p, li')].find(e => e.textContent.startsWith(first));
  if (!start) return null;
  const box = start.closest('.judgelab-instructions');
  const edge = box.parentElement.getBoundingClientRect().right;
  return [...box.querySelectorAll('p, li')].map(e => {
    const style = getComputedStyle(e), rect = e.getBoundingClientRect();
    return {tag: e.tagName, text: e.textContent, font: style.fontFamily, wrap: style.whiteSpace,
            marker: getComputedStyle(e.parentElement).listStyleType, lines: Math.round(rect.height /
            parseFloat(style.lineHeight)), right: rect.right, edge: edge, overflow: e.scrollWidth > e.clientWidth};
  });
}"""


@pytest.mark.parametrize(
    ("schema_name", "title"),
    [("summary_flaws", "Resúmenes de Reddit (piloto)"), ("likert_rubric_es", "Noticias Q4 – resúmenes LLM")],
)
def test_the_instructions_pop_up_is_readable_html(schema_name, title, live_stack, artifacts):
    env = {"JUDGELAB_LS_URL": live_stack.url, "JUDGELAB_LS_TOKEN": live_stack.creds.token}
    made = CliRunner().invoke(main, ["create", "--title", title, "--schema", schema_name, "--samples", "--json"],
                              env=env)  # fmt: skip
    assert made.exit_code == 0, made.output
    (project,) = json.loads(made.stdout)["projects"]
    task = next(iter(live_stack.client.tasks.list(project=project["id"])))
    written = get_schema(schema_name).meta["instructions"]
    first_words = " ".join(written.split()[:4]).removeprefix("1. ")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1366, "height": 768})
        log_in(page, live_stack)
        page.goto(f"{live_stack.url}/projects/{project['id']}/data?tab=0&task={task.id}")
        page.wait_for_selector("[class*=richtext]", timeout=60_000)
        page.get_by_role("button", name="Instructions").first.click()
        page.get_by_text(first_words).first.wait_for(timeout=30_000)
        page.wait_for_timeout(500)
        page.screenshot(path=str(artifacts / f"instructions_{schema_name}.png"))
        shown = page.evaluate(SHOWN_JS, first_words)
        browser.close()
    assert shown, "the instructions are not in the pop-up"
    # every word of the instructions is there, in order (the list numbers are the list's own)
    words = " ".join(re.sub(r"(?m)^\s*\d+\.\s+", "", written).split())
    assert " ".join(" ".join(line["text"] for line in shown).split()) == words
    for line in shown:
        assert "mono" not in line["font"].lower() and line["wrap"] == "normal", line
        assert not line["overflow"] and line["right"] <= line["edge"] + 1, line  # nothing cut at the right
    if schema_name == "summary_flaws":  # the numbered steps are a numbered list
        assert [line["tag"] for line in shown] == ["LI"] * 5 and {line["marker"] for line in shown} == {"decimal"}
        assert max(line["lines"] for line in shown) >= 2  # a long step wraps inside the pop-up
    else:
        assert [line["tag"] for line in shown] == ["P"] and shown[0]["lines"] >= 3
