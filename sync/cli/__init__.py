"""The ``judgelab`` command line: one group (:mod:`.base`), its commands by topic.

- :mod:`.projects`: schemas, create, import, connect, preannotate;
- :mod:`.tables`: sync, load, report;
- :mod:`.stack`: up, down;
- :mod:`.design`: design batches, qualification, groups, pilot, overlap;
- :mod:`.people`: invite, annotators add.

Library code raises :class:`~judgelab.sync.client.SyncError` (and friends); only these modules turn
them into messages and exit codes (1 for a problem the user must fix).
"""

from judgelab.sync.cli import design, people, projects, stack, tables  # noqa: F401  (they register their commands)
from judgelab.sync.cli.base import main

__all__ = ["main"]
