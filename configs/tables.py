"""The tidy-table contract between ``sync`` (which writes the tables) and ``analysis`` (which
reads them), defined once: the columns every ``tasks``, ``judgments`` and ``spans`` table has.

See ``../shared/design.md``: one row per judgment, offsets in Python code points.
"""

from __future__ import annotations

TASK_COLUMNS = ["project", "task_id", "schema", "key"]
# The sync's tasks table: a task's data fields that cannot have a column of their own (a name that
# differs from another column only in case, a fixed column's name, past the column limit), as JSON.
TASK_EXTRA_COLUMN = "extra_fields"
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

#: LLM token usage per task and model version, from the ML backend's usage log (``judgelab sync``
#: stores it as ``usage`` next to the tables): ``requests`` that carried the task's tokens,
#: ``answers`` they gave, ``cached`` answers that cost nothing (the cache, or shared with an
#: identical task), ``unreported`` requests whose server reported no usage (not counted),
#: ``unpriced`` requests without a price, the token sums and ``cost`` (empty without prices);
#: ``backend`` is the ML backend's URL.
USAGE_COLUMNS = [
    "project",
    "task_id",
    "model_version",
    "model",
    "requests",
    "answers",
    "cached",
    "unreported",
    "unpriced",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "backend",
]
