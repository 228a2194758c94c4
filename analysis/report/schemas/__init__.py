"""A schema's own report sections: each module here is named after its schema and registers its
builder with :data:`SCHEMA_SECTIONS` (a schema folder of one's own registers from its
``report.py``)::

    @SCHEMA_SECTIONS.register("likert_rubric_es", also_when=looks_like_rubric)
    def likert_section(data: ProjectData) -> Section | None: ...

A project's own schema's builder runs on it (the builder does not check the schema again);
``also_when(data)``, when given, says by the data's shape alone that the section describes a
project of another schema, or of none, too (a rubric's ratings, line items, spans).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from judgelab.analysis.report.blocks import Section
from judgelab.analysis.report.data import ProjectData
from judgelab.configs.plugins import Registry

SectionBuild = Callable[[ProjectData], "Section | list[Section] | None"]
DataTest = Callable[[ProjectData], bool]


@dataclass(frozen=True)
class SchemaSection:
    """A schema's section builder, and the data of other schemas it also describes."""

    build: SectionBuild
    also_when: DataTest | None = None

    @classmethod
    def of(cls, schema: str, build: SectionBuild, *, also_when: DataTest | None = None) -> SchemaSection:
        """The registry's entry for ``@SCHEMA_SECTIONS.register(schema, also_when=...)``."""
        return cls(build, also_when)


SCHEMA_SECTIONS: Registry[SchemaSection] = Registry("report", __name__, entry=SchemaSection.of)
