"""The published data sets ``judgelab load`` reads, by name.

Each loader module registers the function that reads its data set into the loaders' dict of
tables, with what PATH is (a file, or a folder where the loader allows one), which of ``load``'s
options apply to it, and its study's published analysis::

    @DATA_SETS.register("basse", path_help="BASSE.<lang>.jsonl, or a folder of them", options=("nan_ratings",))
    def read_basse(path, project=None, nan_ratings=None) -> dict[str, Any]: ...

A schema folder's ``loader.py`` can register one too
(the registry imports it, as the other layers' registries do, see :mod:`judgelab.configs.plugins`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judgelab.analysis.facets import Cut
from judgelab.configs.plugins import Registry

# the options of ``judgelab load`` a data set may take (besides PATH and a project name)
OPTIONS = ("predictions", "combined", "config", "schema", "nan_ratings", "summary_verdict")


@dataclass(frozen=True)
class DataSet:
    name: str
    path_help: str  # what PATH is, for ``judgelab load --help``
    options: frozenset[str]  # those of OPTIONS that apply
    read: Callable[..., dict[str, Any]]  # read(path, project=None, **options) -> tasks/judgments/spans/problems
    cut: Cut | None = None  # how its study is analysed: recorded beside the tables it loads

    @classmethod
    def of(
        cls,
        name: str,
        read: Callable[..., dict[str, Any]],
        *,
        path_help: str,
        options: tuple[str, ...] = (),
        cut: Cut | None = None,
    ) -> DataSet:
        """The registry's entry for ``@DATA_SETS.register(name, path_help=..., options=..., cut=...)``
        on ``read(path, project=None, **options)``; ``cut`` is its study's published analysis, which
        every report of the loaded tables applies."""
        unknown = set(options) - set(OPTIONS)
        if unknown:
            raise ValueError(f"data set {name}: unknown option(s) {', '.join(sorted(unknown))}")
        return cls(name, path_help, frozenset(options), read, cut)


DATA_SETS: Registry[DataSet] = Registry("loader", "judgelab.analysis.loaders", entry=DataSet.of)


def get_data_set(name: str) -> DataSet | None:
    return DATA_SETS.get(name)


def data_set_names() -> list[str]:
    return DATA_SETS.names()
