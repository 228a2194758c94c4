"""A schema's own report sections: each module here is named after its schema and registers its
builder with :data:`SCHEMA_SECTIONS` (a schema folder of one's own registers from its
``report.py``)."""

from __future__ import annotations

from judgelab.configs.plugins import Registry

SCHEMA_SECTIONS: Registry = Registry("report", __name__)
