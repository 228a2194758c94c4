"""The story schema's named words (``constants:`` in ``configs/story_consistency/schema.yaml``), read
once for every layer that works with story verdicts: the offline and LLM annotators, the loaders of
StorySumm's data sets, the story QC.

>>> INCONSISTENT, LINE_ITEM
('Inconsistent', 'line_{i}')
"""

from __future__ import annotations

from judgelab.configs.schema import builtin_schema

STORY = builtin_schema("story_consistency")
CONSISTENT = STORY.constant("consistent")
INCONSISTENT = STORY.constant("inconsistent")
NOT_APPLICABLE = STORY.constant("not_applicable")
FAITHFUL = STORY.constant("summary_faithful")
UNFAITHFUL = STORY.constant("summary_unfaithful")
SUMMARY_ITEM = STORY.constant("summary_item")
LINE_ITEM = STORY.constant("line_item")  # a line's verdict: the item of verdict_{i}
LINE_EXPLANATION_ITEM = STORY.constant("line_explanation_item")
SWAP, KEEP = STORY.constant("swap"), STORY.constant("keep")
AMBIGUOUS = STORY.constant("ambiguous")
