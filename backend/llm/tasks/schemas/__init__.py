"""One module per schema, named after it, each registering its LLM task (a subclass of
:class:`~judgelab.backend.llm.tasks.base.SchemaTask`) with :data:`LLM_TASKS`::

    @LLM_TASKS.register("my_schema")
    class MySchemaTask(SchemaTask): ...

The task's ``name`` is set to the schema's. A schema folder of one's own registers its task from
its ``llm.py`` (with ``from judgelab.backend.llm.tasks import LLM_TASKS, SchemaTask``)."""

from __future__ import annotations

from typing import Any

from judgelab.configs.plugins import Registry


def _named(name: str, cls: type[Any]) -> type[Any]:
    """The registry's entry: the task class, named after its schema."""
    cls.name = name
    return cls


LLM_TASKS: Registry = Registry("llm", __name__, entry=_named)
