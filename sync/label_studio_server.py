"""Label Studio's own ``label-studio`` command, its server's connections with TCP_NODELAY, its
garbage collector tuned for a server and its SQLite database in write-ahead-log mode.

``label-studio start`` serves with Django's development server, which writes a response's headers
and its body in two sends on a socket with Nagle's algorithm on: the body waits until the client
acknowledges the headers, and a client delays that acknowledgement by 40 ms. Every request then
took at least 40 ms: a ``whoami`` 50 ms of which 8 ms were Label Studio's work, 6 ms with the
option set. judgelab's commands make hundreds of requests (a sync, a pre-annotation in chunks),
so :func:`judgelab.sync.local_stack.spawn_label_studio` starts Label Studio through this module
when Label Studio is installed beside judgelab::

    python -m judgelab.sync.label_studio_server start --port 8080 ...

takes the arguments of ``label-studio`` and runs it unchanged but for that option, the
collector's settings (:func:`_tune_collector`), SQLite's journal (:func:`_sqlite_write_ahead_log`)
and where git looks for Label Studio's version (:func:`_no_repository_above_the_install`).
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from pathlib import Path

# Python collects its youngest objects every 700 allocations by default; a request to Label
# Studio allocates hundreds of thousands (a page of tasks, their JSON), so collections ran many
# times a request and the full ones, each a walk over all of Django's and Label Studio's objects,
# took 200-250 ms: on PostgreSQL one import of 100 predictions in six took 320-370 ms instead of
# 75 ms, a full collection inside it (77 of them in a pre-annotation of 6,000 tasks). Collected
# less often, a request's garbage lives longer: at every 50,000 allocations Label Studio peaked at
# 800 MiB in that pre-annotation (634 MiB by default), at every 10,000 at 706 MiB, for most of the
# time saved.
YOUNG_COLLECTION_EVERY = 10_000


def _tune_collector() -> None:
    """Once the server is ready to serve: its objects loaded so far (Django, Label Studio, their
    modules: they live as long as the process) moved out of the collector's sight (``gc.freeze``),
    so a full collection walks only what requests made since, 20-60 ms; and the youngest objects
    collected every :data:`YOUNG_COLLECTION_EVERY` allocations. A pre-annotation of 6,000 tasks on
    PostgreSQL took 16-18 s before, 12-14 s after."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)


# What each of Label Studio's connections to a SQLite database runs first: in write-ahead-log mode,
# a commit waits for the disk only when the log is copied into the database (a checkpoint), not at
# every commit. Durable against Label Studio being killed; a power cut or a crash of the system
# may lose the last commits, never the database's consistency.
SQLITE_CONNECTION_SETUP = "PRAGMA synchronous=NORMAL"


def _sqlite_write_ahead_log() -> None:
    """Once the server is ready to serve, a SQLite database (Label Studio's default) is put in
    write-ahead-log mode (kept in the file: every later connection, any program's, uses it) and
    each connection a request opens runs :data:`SQLITE_CONNECTION_SETUP`. In the default rollback
    journal each commit created, synced and deleted a journal file: an annotation's save took
    44-50 ms, 37.3-37.5 ms now (``bench/label_studio_sqlite.py``). PostgreSQL is left as it is."""
    from django.conf import settings

    if not settings.configured:  # not run by Django's runserver (a probe of the launcher)
        return
    from django.db import DatabaseError, connections

    for alias in connections:
        database = connections.settings[alias]
        if database["ENGINE"] != "django.db.backends.sqlite3" or database["NAME"] in ("", ":memory:"):
            continue
        options = database.setdefault("OPTIONS", {})
        options["init_command"] = ";".join(filter(None, [options.get("init_command"), SQLITE_CONNECTION_SETUP]))
        try:
            with connections[alias].cursor() as cursor:  # this thread's connection, opened before
                cursor.execute("PRAGMA journal_mode=WAL")
        except DatabaseError as exc:  # a file system without shared memory, say: served as it was
            print(f"judgelab: Label Studio's SQLite database stays in its journal mode ({exc})", file=sys.stderr)


def _no_repository_above_the_install() -> None:
    """Keep git from taking a repository that holds Label Studio's install for Label Studio's own.

    Label Studio asks git for its version (five ``git`` commands in a shell, from its package's
    folder) on every export request, and writes what git says over the version file it shipped
    with. Installed in a virtualenv inside a git checkout (judgelab's own ``.venv``), git finds the
    checkout: each export request spent about 17 ms in those commands (2-4 ms when git finds no
    repository), and Label Studio reported the checkout's commit as its version. An installed
    package has no repository of its own, so git's search stops at the folder holding it
    (``GIT_CEILING_DIRECTORIES``); a Label Studio run from its own checkout is left as it is."""
    spec = importlib.util.find_spec("label_studio")
    if spec is None or not spec.submodule_search_locations:
        return
    installed_in = Path(next(iter(spec.submodule_search_locations))).parent
    if installed_in.name not in ("site-packages", "dist-packages"):
        return
    ceilings = os.environ.get("GIT_CEILING_DIRECTORIES")
    os.environ["GIT_CEILING_DIRECTORIES"] = f"{ceilings}{os.pathsep}{installed_in}" if ceilings else str(installed_in)


def main() -> None:
    from django.core.management.commands import runserver
    from django.core.servers import basehttp

    # socketserver.StreamRequestHandler sets TCP_NODELAY on each connection when this is True
    basehttp.WSGIRequestHandler.disable_nagle_algorithm = True
    serve = runserver.run  # what `runserver` calls once its checks ran and its handler is loaded

    def tuned_then_served(*args, **kwargs):
        _sqlite_write_ahead_log()
        _tune_collector()
        return serve(*args, **kwargs)

    runserver.run = tuned_then_served
    _no_repository_above_the_install()
    from label_studio.server import main as label_studio_main

    sys.argv[0] = "label-studio"
    sys.exit(label_studio_main())


if __name__ == "__main__":
    main()
