"""LLM tasks: one per schema (spacy-llm style), registered by name, plus a generic task.

A task renders the chat messages for one Label Studio task and turns the model's answer into a
:class:`~backend.draft.Draft`; it knows nothing about the model client. ``task_for`` picks the
task for a project::

    task = task_for(get_schema("hotel_spans"), project_label_config, variant="less_strict")
    messages = task.messages(data)              # -> client
    draft = task.to_draft(answer_text, data)    # -> backend.results.build_results

Templates are files (``configs/<schema>/prompt.txt``, see :mod:`backend.llm.prompting`);
``version`` is a short hash of the template text(s), the expected output (format and JSON
schema) and the task class version, so editing a prompt changes the prediction version.

``to_draft`` never raises. Each answer goes through the same steps: parse
(:mod:`backend.llm.answers`), map labels and values onto the config's own labels, choices and
scales, place quoted spans on the task text (:mod:`backend.llm.alignment`), then check the
draft with :func:`backend.results.build_results`. What was repaired, dropped, clamped or is
missing is counted in ``Draft.info``; nothing is invented (a line without a verdict stays
without one, for the annotator).

Layout: this module (``task_for``), :mod:`.base` (:class:`SchemaTask`), :mod:`.api` (the helpers a
task uses on an answer: its plugin API), :mod:`.generic` (:class:`GenericTask`, for any config), and
``schemas/<schema>.py``, one module per schema, each registering its task with
``@LLM_TASKS.register("<schema>")`` (:data:`LLM_TASKS` lives in ``schemas/__init__``). A schema folder
of one's own (``$JUDGELAB_CONFIGS_DIR/<schema>/llm.py``) brings its task the same way; it is loaded the
first time a task is looked up (:class:`judgelab.configs.plugins.Registry`).
"""

from __future__ import annotations

from judgelab.backend.llm.contracts import LLMTask
from judgelab.backend.llm.prompting import PromptError
from judgelab.backend.llm.tasks.base import SchemaTask, registered
from judgelab.backend.llm.tasks.generic import GenericTask
from judgelab.backend.llm.tasks.schemas import LLM_TASKS
from judgelab.backend.llm.tasks.schemas.story_consistency import verdict_of
from judgelab.configs.schema import Schema

__all__ = [
    "LLM_TASKS",
    "GenericTask",
    "PromptError",
    "SchemaTask",
    "registered",
    "task_for",
    "verdict_of",
]


def task_for(schema: Schema | None, label_config_xml: str, variant: str | None = None) -> LLMTask:
    """The task for a project: the schema's registered task, else the generic one.

    ``variant`` picks a prompt variant (hotel_spans: ``"main"`` or ``"less_strict"``); by
    default the schema's ``prompt.prompt_variant``. Raises :class:`PromptError` when a
    template is missing or a variant is unknown, and ``LabelConfigError`` for a bad config.
    """
    cls = LLM_TASKS.get(schema.name) if schema is not None else None
    if cls is None:
        return GenericTask(schema, label_config_xml, variant)
    return cls(schema, label_config_xml, variant)
