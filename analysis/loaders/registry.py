"""The published data sets ``judgelab load`` reads, by name.

Each loader module registers its data set with :func:`data_set`: what PATH is (a file, or a folder
where the loader allows one), which of ``load``'s options apply to it, and the function that
reads it into the loaders' dict of tables. A schema folder's ``loader.py`` can register one too
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


DATA_SETS: Registry[DataSet] = Registry("loader", "judgelab.analysis.loaders")


def data_set(name: str, path_help: str, options: tuple[str, ...] = (), cut: Cut | None = None) -> Callable:
    """Register the decorated ``read(path, project=None, **options)`` as data set ``name``; ``cut``
    is its study's published analysis, which every report of the loaded tables applies."""
    unknown = set(options) - set(OPTIONS)
    if unknown:
        raise ValueError(f"data set {name}: unknown option(s) {', '.join(sorted(unknown))}")

    def register(read: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        DATA_SETS.register(name, DataSet(name, path_help, frozenset(options), read, cut))
        return read

    return register


def get_data_set(name: str) -> DataSet | None:
    return DATA_SETS.get(name)


def data_set_names() -> list[str]:
    return DATA_SETS.names()
