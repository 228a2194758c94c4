"""The tidy-table contract between ``sync`` (which writes the tables) and ``analysis`` (which
reads them), defined once: the columns every ``tasks``, ``judgments`` and ``spans`` table has.

See ``../shared/design.md``: one row per judgment, offsets in Python code points.
"""

from __future__ import annotations

TASK_COLUMNS = ["project", "task_id", "schema", "key"]
# the project's own settings, the same on every task row of a project (empty for data loaded
# without Label Studio): its title, and its overlap target (annotations per task, on a share of
# the tasks). Tables written before these existed load without them.
PROJECT_COLUMNS = ["project_title", "project_max_annotations", "project_overlap_percent"]
JUDGMENT_COLUMNS = [
    "project",
    "task_id",
    "annotation_id",
    "annotator",
    "source",
    "item",
    "value",
    "created_at",
    "updated_at",
    "lead_time",
    "was_cancelled",
    "ground_truth",
]
SPAN_COLUMNS = [
    "project",
    "task_id",
    "annotation_id",
    "annotator",
    "source",
    "field",
    "start",
    "end",
    "text",
    "label",
    "note",
]
