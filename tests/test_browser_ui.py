"""The labeling UI as an annotator sees it, in headless Chromium (Debian's package).

For one task of each schema: the task's own texts are visible and the backend's pre-annotated
regions are shown. Then an annotator selects a span after an emoji (stored offsets must be
Python code points) and a story task refuses to submit while a line has no verdict.
Screenshots go to test-artifacts/.
"""

from __future__ import annotations

import re
import shutil
import time

import httpx
import pytest
from playwright.sync_api import Error as PlaywrightError

from judgelab.configs.schema import all_schemas
from judgelab.sync.backend_link import connect_backend, retrieve_predictions
from judgelab.sync.http_retry import tls_context
from judgelab.sync.importers import rows_from_records
from judgelab.sync.projects import ensure_project, import_rows

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.integration,
    pytest.mark.skipif(not shutil.which("chromium"), reason="Debian's chromium is not installed"),
]
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# Bounds that hold on a slow machine (2 cores shared with other Label Studio jobs, where a page of
# Label Studio took longer than Playwright's default 30 s to load). Every wait ends as soon as what
# it waits for is there: on a quiet machine the tests take no longer for them.
LABEL_STUDIO_ANSWER_S = 300  # Label Studio answering /health before a page is opened
NAVIGATION_MS = 240_000  # a page of Label Studio loading (its scripts are several MB)
ACTION_MS = 120_000  # an element appearing, a click taking effect
SAVED_S = 120  # a submitted annotation reaching Label Studio's API

# Rectangles of a code-unit range inside the richtext element that shows ``full``.
RANGE_JS = """([full, start, length]) => {
  const hosts = [...document.querySelectorAll('[class*=richtext]')].filter(e => e.textContent.includes(full));
  const host = hosts[hosts.length - 1];
  if (!host) return null;
  const base = host.textContent.indexOf(full);
  const locate = (offset) => {
    const walker = document.createTreeWalker(host, NodeFilter.SHOW_TEXT);
    let node, seen = 0;
    while ((node = walker.nextNode())) {
      if (seen + node.data.length >= offset) return [node, offset - seen];
      seen += node.data.length;
    }
    return null;
  };
  const a = locate(base + start), z = locate(base + start + length);
  const range = document.createRange();
  range.setStart(a[0], a[1]);
  range.setEnd(z[0], z[1]);
  const rects = range.getClientRects(), first = rects[0], last = rects[rects.length - 1];
  return {x1: first.left + 0.5, y: first.top + first.height / 2, x2: last.right - 0.5, y2: last.top + last.height / 2};
}"""


def utf16_len(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.fixture(scope="module")
def ui_projects(live_stack):
    client = live_stack.client
    out = {}
    for schema in all_schemas().values():
        project = ensure_project(client, schema)
        rows = rows_from_records([(f"samples.json item {i}", t) for i, t in enumerate(schema.samples())], schema)
        import_rows(client, project.id, rows)
        connect_backend(client, project.id, live_stack.backend_url)
        retrieve_predictions(client, project.id)
        out[schema.name] = project.id
    return out


def logged_in_page(live_stack, height: int):
    """A headless Chromium page logged in to Label Studio (yields it)."""
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1400, "height": height})
        log_in(page, live_stack)
        yield page
        browser.close()


@pytest.fixture(scope="module")
def page(live_stack):
    yield from logged_in_page(live_stack, 1300)


def wait_for_label_studio(live_stack) -> None:
    """Wait until Label Studio answers: a page opened while it is busy would spend the browser's
    bound waiting for the server instead of loading."""
    deadline = time.monotonic() + LABEL_STUDIO_ANSWER_S
    while True:
        try:
            if httpx.get(f"{live_stack.url}/health", timeout=30, verify=tls_context()).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"Label Studio at {live_stack.url} did not answer in {LABEL_STUDIO_ANSWER_S} s")
        time.sleep(1)


def open_page(page, live_stack, path: str) -> None:
    """Open a page of Label Studio once it answers; its content is waited for by the caller."""
    wait_for_label_studio(live_stack)
    page.goto(f"{live_stack.url}{path}", wait_until="domcontentloaded")


LOGIN_ATTEMPTS = 3


def logged_in(page, live_stack) -> bool:
    """Whether Label Studio takes the browser's session cookie as the logged-in admin."""
    answer = page.request.get(f"{live_stack.url}/api/current-user/whoami")
    return answer.ok and answer.json().get("email") == live_stack.creds.username


def log_in(page, live_stack) -> None:
    """Log in to Label Studio as the preset admin, as an annotator would (the page gets the slow
    machine's bounds for what follows).

    A submitted form can end on the browser's error page instead of Label Studio's (a connection
    dropped by a server busy with other jobs): the session is checked with Label Studio's API, and
    the form filled again, as a person would, up to ``LOGIN_ATTEMPTS`` times.
    """
    page.set_default_navigation_timeout(NAVIGATION_MS)
    page.set_default_timeout(ACTION_MS)
    seen = []
    for _ in range(LOGIN_ATTEMPTS):
        open_page(page, live_stack, "/user/login")
        if "/user/login" in page.url:  # Label Studio sends a logged-in browser on to its projects
            page.fill("input[name=email]", live_stack.creds.username)
            page.fill("input[name=password]", live_stack.creds.password)
            page.click("button[type=submit]")
            page.wait_for_url(lambda url: "/user/login" not in url)
            page.wait_for_load_state("networkidle")
        if logged_in(page, live_stack):
            return
        seen.append(page.url)
    user = live_stack.creds.username
    raise AssertionError(f"Label Studio did not keep the login of {user}; pages after submitting: {seen}")


def open_task(page, live_stack, project_id, task_id):
    path = f"/projects/{project_id}/data?tab=0&task={task_id}"
    open_page(page, live_stack, path)
    if "/user/login" in page.url:  # the session was lost: log in again, say so, and open the task
        print(f"Label Studio asked for a login again at {path}; logging in again")
        log_in(page, live_stack)
        open_page(page, live_stack, path)
    page.wait_for_selector("[class*=richtext]")
    page.wait_for_load_state("networkidle")  # the task's predictions and annotations have come
    page.wait_for_timeout(1500)


def saved_annotations(client, task_id: int) -> list:
    """The task's annotations once a submitted one has reached Label Studio's API."""
    deadline = time.monotonic() + SAVED_S
    while not (annotations := client.annotations.list(id=task_id)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return annotations


def _highlights(page) -> list[str]:
    """The texts of the regions highlighted in the task's text."""
    return page.evaluate(
        "() => [...document.querySelectorAll('[class*=richtext] [class*=highlight]')].map(e => e.textContent)"
    )


def _task_where(client, project_id, predicate):
    return next(t for t in client.tasks.list(project=project_id, fields="all") if predicate(t.data))


VISIBLE = {
    "summary_flaws": lambda d: [d["summary"], d["title"]],
    "augmentation_quality": lambda d: [d["original"], d["generated"]],
    "story_consistency": lambda d: [line["text"] for line in d["lines"]],
    "likert_rubric_es": lambda d: [d["summary"]],
    "hotel_spans": lambda d: [d["summary"], d["no_errors_options"][0]["value"]],
}


EMOJI_TASK = {
    "id": "browser-emoji",
    "subreddit": "r/cats",
    "title": "Mi vecino José feeds my cat 🐱 every day",
    "post": "My neighbour José runs the café downstairs. He feeds my two cats 🐱🐱 ham through the window "
    "and now they refuse their own food. How do I ask him to stop without being rude?",
    "summary": "José 😅 from the café feeds my 5 cats ham through the window, now they won't eat.",
    "score": 4.2,
}


@pytest.fixture(scope="module")
def emoji_task(ui_projects, live_stack):
    """A task whose summary has an emoji before a predicted span (the number 5 is not in the post)."""
    client = live_stack.client
    schema = all_schemas()["summary_flaws"]
    project_id = ui_projects["summary_flaws"]
    import_rows(client, project_id, rows_from_records([("browser test", EMOJI_TASK)], schema))
    retrieve_predictions(client, project_id)
    return _task_where(client, project_id, lambda d: d.get("id") == "browser-emoji")


@pytest.mark.parametrize("schema", list(VISIBLE))
def test_task_shows_its_texts_and_the_predicted_regions(schema, ui_projects, emoji_task, page, live_stack, artifacts):
    client = live_stack.client
    project_id = ui_projects[schema]
    if schema == "summary_flaws":
        task = emoji_task
    else:
        task = next(iter(client.tasks.list(project=project_id, fields="all")))
    [prediction] = client.predictions.list(task=task.id)
    spans = [r for r in prediction.result if r["type"] == "labels"]
    open_task(page, live_stack, project_id, task.id)
    highlighted = _highlights(page)
    if spans and not highlighted:
        # Label Studio once showed a task with an empty annotation in place of the prediction's, as its
        # Data Manager made the project's first tab: open it again, and say so
        print(f"{schema}: task {task.id} was shown without its prediction's regions; opening it again")
        open_task(page, live_stack, project_id, task.id)
        highlighted = _highlights(page)
    page.screenshot(path=str(artifacts / f"ui_{schema}.png"), full_page=True)
    body = " ".join(page.inner_text("body").split())
    for text in VISIBLE[schema](task.data):
        assert " ".join(text.split())[:60] in body, f"{schema}: {text[:40]!r} not shown"
    assert sorted(r["value"]["text"] for r in spans) == sorted(highlighted), f"{schema}: highlights differ"
    chosen = [c for r in prediction.result if r["type"] == "choices" for c in r["value"]["choices"]]
    checked = page.evaluate(
        "() => [...document.querySelectorAll('.lsf-choices [class*=wrapper-checked]')]"
        ".map(e => e.innerText.replace(/\\[.\\]$/, '').trim())"
    )
    assert len(checked) == len(chosen), f"{schema}: {len(chosen)} predicted choices, {checked} shown selected"
    if schema == "story_consistency":  # no aliases here: the labels shown are the values predicted
        assert checked == chosen
    if schema == "summary_flaws":  # the span after the emoji sits on the right characters
        [five] = [r for r in spans if r["value"]["text"] == "5"]
        assert five["value"]["start"] == task.data["summary"].index("5")


def test_span_selected_after_an_emoji_is_stored_in_code_points(ui_projects, page, live_stack, artifacts):
    client = live_stack.client
    schema = all_schemas()["summary_flaws"]
    project = ensure_project(client, schema, title="Span UI check (no backend)")
    task_id = import_rows(client, project.id, rows_from_records([("browser test", EMOJI_TASK)], schema)).task_ids[0]
    project_id = project.id
    task = client.tasks.get(id=task_id)
    summary = task.data["summary"]
    after = summary.index("😅") + 1
    words = summary[after:].split()
    phrase = " ".join(words[1:3])
    start = summary.index(phrase, after)
    open_task(page, live_stack, project_id, task.id)
    page.get_by_text("Irrelevant", exact=True).first.click()
    box = page.evaluate(RANGE_JS, [summary, utf16_len(summary[:start]), utf16_len(phrase)])
    page.mouse.move(box["x1"], box["y"])
    page.mouse.down()
    page.mouse.move(box["x2"], box["y2"], steps=8)
    page.mouse.up()
    page.keyboard.press("Escape")
    page.get_by_text(phrase, exact=True).last.click()  # select the region in the outliner
    note = page.locator("textarea[name=flaw_note]:visible")
    note.fill("the café is not the point of the post")
    note.press("Shift+Enter")
    page.screenshot(path=str(artifacts / "ui_span_after_emoji.png"), full_page=True)
    page.get_by_role("button", name="Submit").click()
    annotations = saved_annotations(client, task.id)
    assert len(annotations) == 1
    result = annotations[0].result
    assert sorted(r["type"] for r in result) == ["labels", "textarea"]
    label = next(r for r in result if r["type"] == "labels")
    assert (label["value"]["start"], label["value"]["end"]) == (start, start + len(phrase))
    assert label["value"]["text"] == summary[label["value"]["start"] : label["value"]["end"]] == phrase
    note_region = next(r for r in result if r["type"] == "textarea")
    assert note_region["id"] == label["id"] and note_region["value"]["text"] == [
        "the café is not the point of the post"
    ]


def _radio(page, text):
    return page.locator("label").filter(has_text=re.compile(rf"^{re.escape(text)}")).locator("input[type=radio]")


def _submit_expecting(page, message):
    """Submit, expect Label Studio's refusal dialog, close it: True when ``message`` was shown. On a
    loaded machine a click on OK can land while the dialog is still opening and be lost (the
    dialog then covered the page for good), so OK is clicked until no dialog is left."""
    page.get_by_role("button", name="Submit").click()
    ok = page.get_by_role("button", name="OK")
    ok.first.wait_for()  # the refusal's dialog
    shown = []
    deadline = time.monotonic() + 60
    while ok.count() and time.monotonic() < deadline:
        shown.append(page.inner_text("body"))
        try:
            ok.first.click(timeout=5_000)
            ok.first.wait_for(state="hidden", timeout=2_000)
        except PlaywrightError:
            continue  # still there (or another one): look again
    assert ok.count() == 0, "Label Studio's dialog did not close"
    return any(message in text for text in shown)


def test_story_cannot_be_submitted_with_a_line_left_unjudged(ui_projects, page, live_stack, artifacts):
    client = live_stack.client
    schema = all_schemas()["story_consistency"]
    project = ensure_project(client, schema, title="Story UI check (no backend)")
    sample = next(t for t in schema.samples() if any(line.get("alternate") for line in t["data"]["lines"]))
    rows = rows_from_records([("samples.json", sample)], schema)
    task_id = import_rows(client, project.id, rows).task_ids[0]
    lines, alternates = rows[0].data["lines"], rows[0].data["alternates"]
    open_task(page, live_stack, project.id, task_id)
    consistent, inconsistent = _radio(page, "Consistent"), _radio(page, "Inconsistent")
    assert consistent.count() == inconsistent.count() == len(lines)
    for i in range(len(lines) - 1):  # every line but the last
        consistent.nth(i).check()
    for k in range(len(alternates)):
        _radio(page, "No").nth(k).check()
        page.locator(f"[name=swap_explanation_{k}]").fill("the alternate adds nothing")
        page.locator(f"[name=swap_explanation_{k}]").press("Shift+Enter")
    page.screenshot(path=str(artifacts / "ui_story_missing_verdict.png"), full_page=True)
    assert _submit_expecting(page, "Every summary line needs a verdict")
    assert client.annotations.list(id=task_id) == []

    inconsistent.nth(len(lines) - 1).check()  # an Inconsistent verdict needs an explanation
    assert _submit_expecting(page, "Explain why the line is inconsistent")
    assert client.annotations.list(id=task_id) == []

    explanation = page.locator(f"[name=explanation_{len(lines) - 1}]")
    explanation.fill("the story never says so")
    explanation.press("Shift+Enter")
    page.get_by_role("button", name="Submit").click()
    [annotation] = saved_annotations(client, task_id)
    page.screenshot(path=str(artifacts / "ui_story_submitted.png"), full_page=True)
    verdicts = {r["from_name"]: r["value"]["choices"][0] for r in annotation.result if r["type"] == "choices"}
    assert [verdicts[f"verdict_{i}"] for i in range(len(lines))] == ["Consistent"] * (len(lines) - 1) + ["Inconsistent"]
    assert all(verdicts[f"swap_{k}"] == "No" for k in range(len(alternates)))
