"""One module per schema, named after it, each registering its LLM task with :data:`LLM_TASKS`
(``@register_task("<schema>")`` of :mod:`judgelab.backend.llm.tasks.base`). A schema folder of one's
own registers its task from its ``llm.py``."""

from __future__ import annotations

from judgelab.configs.plugins import Registry

LLM_TASKS: Registry = Registry("llm", __name__)
