"""Users' files into checked Label Studio tasks.

- :mod:`.records`: the one reader of users' files (CSV, TSV, JSON Lines, JSON) into
  ``(where, record)`` pairs;
- :mod:`.rows`: records checked against a schema into :class:`~.rows.TaskRow` (task keys,
  all-or-nothing or ``--skip-bad``);
- :mod:`.mapping`: ``--map field=column``; :mod:`.generic`: the generic format;
- :mod:`.formats`: one module per seed format, each registering its reader as an
  :class:`~.registry.Importer` (:mod:`.registry`); :mod:`.dispatch` picks the reader of a file
  (``--format``, or detection from its first record);
- :mod:`.annotations`: earlier rounds' annotations (``judgelab import --annotations``).
"""

from judgelab.sync.importers.dispatch import detect_format, format_names, read_task_file, read_tasks
from judgelab.sync.importers.mapping import parse_mapping
from judgelab.sync.importers.records import read_records
from judgelab.sync.importers.rows import KEY_FIELD, Rows, TaskRow, checked_rows, rows_from_records, task_key

__all__ = [
    "KEY_FIELD",
    "Rows",
    "TaskRow",
    "checked_rows",
    "detect_format",
    "format_names",
    "parse_mapping",
    "read_records",
    "read_task_file",
    "read_tasks",
    "rows_from_records",
    "task_key",
]
