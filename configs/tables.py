"""The tidy-table contract between ``sync`` (which writes the tables) and ``analysis`` (which
reads them), defined once: the columns every ``tasks``, ``judgments`` and ``spans`` table has.

Long format: one row per judgment (and per span); span offsets are Python code points into the
task's text, so ``text[start:end]`` is the span's ``text``.

What Label Studio records about suggestions travels with every judgment and span row:

- ``region_id``: the id of the Label Studio result the row comes from. Label Studio keeps a
  prediction's result ids when an annotator starts from the prediction, so a human row and the
  model row it came from share it (all results of one region share one id).
- ``origin``: Label Studio's own mark on a human result, as recorded: ``prediction`` (copied
  from the prediction), ``prediction-changed`` (the region was edited after the copy) or
  ``manual`` (made by the annotator); empty in tables written before judgelab kept it. It is a
  hint, not an audit: ``analysis.review`` decides kept / edited / deleted / added by comparing
  with the parent prediction.
- ``parent_prediction``: the id of the prediction the annotation started from (Label Studio's
  ``parent_prediction``); empty when the annotator started from a blank task. The model rows of
  that prediction have ``annotation_id`` ``prediction:<id>``.

Older tables lack these columns (and ``spans`` its ``lead_time``); the analysis treats them as
empty (no review, no suggestions).
"""

from __future__ import annotations

# ``inclusion_probability`` (float, NaN without one) and ``sampled`` (bool, empty without one): the
# task's chance of being in the human sample drawn by ``judgelab design sample`` and whether it is
# (its ``meta["judgelab_sample"]``); the prediction-powered estimates weigh human labels by them.
SAMPLE_COLUMNS = ["inclusion_probability", "sampled"]
TASK_COLUMNS = ["project", "task_id", "schema", "key", *SAMPLE_COLUMNS]
# The sync's tasks table: a task's data fields that cannot have a column of their own (a name that
# differs from another column only in case, a fixed column's name, past the column limit), as JSON.
TASK_EXTRA_COLUMN = "extra_fields"
# the project's own settings, the same on every task row of a project (empty for data loaded
# without Label Studio): its title, and its overlap target (annotations per task, on a share of
# the tasks), and, for a human-sample project, the id of the project it is a sample of
# (``project_sample_of``, from its description's ``[judgelab-sample-of:<id>]``). Tables written
# before these existed load without them.
PROJECT_COLUMNS = ["project_title", "project_max_annotations", "project_overlap_percent", "project_sample_of"]
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
    # what Label Studio records about suggestions (added later, after the original columns)
    "region_id",
    "origin",
    "parent_prediction",
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
    "region_id",
    "origin",
    "parent_prediction",
    "lead_time",
]
PREDICTION_PREFIX = "prediction:"  # annotation_id of a model row: prediction:<Label Studio prediction id>


def prediction_annotation_id(prediction_id: object) -> str:
    """The ``annotation_id`` of the rows of a prediction (``prediction:<id>``)."""
    return f"{PREDICTION_PREFIX}{prediction_id}"


#: LLM token usage per task and model version, from the ML backend's usage log (``judgelab sync``
#: stores it as ``usage`` next to the tables): ``requests`` that carried the task's tokens,
#: ``answers`` they gave, ``cached`` answers that cost nothing (the cache, or shared with an
#: identical task), ``unreported`` requests whose server reported no usage (their tokens and cost
#: are estimated from the text), ``unpriced`` requests without a price, the token sums and
#: ``cost`` (empty without prices), and the estimated part of them (``estimated_tokens``,
#: ``estimated_cost``); ``backend`` is the ML backend's URL.
USAGE_COUNTS = [  # what the backend sums per task and model version (its usage log's summaries too)
    "requests",
    "answers",
    "cached",
    "unreported",
    "unpriced",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "estimated_tokens",
    "estimated_cost",
]
USAGE_COLUMNS = ["project", "task_id", "model_version", "model", *USAGE_COUNTS, "backend"]
