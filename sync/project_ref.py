"""Which Label Studio project a command means: ``--project ID``, ``--title TITLE``, ``--schema NAME``.

Every command that works on a project names it the same way:

- ``--project ID``: that project; it must exist.
- ``--title TITLE``: the project with that title, or the one created with it that an admin
  renamed since (its description carries ``[judgelab-title:TITLE]``). Several projects with one
  title are told apart by ``--schema``; otherwise the command asks for ``--project``.
- neither: the schema's own project (its default title, or renamed: its description carries
  ``[judgelab:<schema>]`` and no title tag).

A project's schema is what its label config *is* (:func:`judgelab.configs.detect.detect_schema`,
which tolerates edited titles, colours and instructions), not what its description says; a
``--schema`` that disagrees with it is an error naming both, before anything is changed. A
config that is none of the schemas is a project "of its own" (``schema`` None): commands that
need a schema (importing tasks, say) refuse it, the others (connecting the backend) accept it.

The lookups read ``/api/projects/`` through :func:`judgelab.sync.ls_api.as_api`, so they work
with an SDK client and with the sync's plain HTTP client alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from judgelab.configs.detect import detect_schema
from judgelab.configs.schema import Schema, all_schemas
from judgelab.sync.client import SyncError
from judgelab.sync.ls_api import as_api
from judgelab.sync.projects import (
    has_title,
    is_schema_default,
    project_schema_name,
    project_titles,
    similar_projects,
    title_key,
)

MAX_LISTED = 8


class ProjectNotFound(SyncError):
    """No project answers to the name given."""


class AmbiguousProject(SyncError):
    """Several projects answer to the name given."""


class SchemaMismatch(SyncError):
    """The project named is not of the schema given (or of none, where one is needed)."""


@dataclass(frozen=True)
class ProjectRef:
    """How a project was named on the command line (all parts optional)."""

    project_id: int | None = None
    title: str | None = None
    schema: Schema | None = None

    def __post_init__(self) -> None:
        if self.project_id is not None and self.title is not None:
            raise SyncError("name the project by --project or by --title, not both")

    @property
    def named(self) -> bool:
        """Whether a project was named (by id or title), not only a schema."""
        return self.project_id is not None or self.title is not None

    def describe(self) -> str:
        if self.project_id is not None:
            return f"project {self.project_id}"
        if self.title is not None:
            return f"project {self.title!r}"
        if self.schema is not None:
            return f"the {self.schema.name} project {self.schema.title!r}"
        return "a project"


@dataclass(frozen=True)
class FoundProject:
    """A project of Label Studio and the schema its label config is (None: a config of its own)."""

    id: int
    title: str
    schema: Schema | None
    created: bool = False

    @property
    def schema_name(self) -> str:
        return self.schema.name if self.schema else "custom"

    def label(self) -> str:
        return f"project {self.id} ({self.title!r}, {self.schema_name})"

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "schema": self.schema_name, "created": self.created}


def project_schema(project: Mapping[str, Any]) -> Schema | None:
    """The schema a project's label config is, or None for a config of its own."""
    config = str(project.get("label_config") or "")
    if not config.strip():
        return None
    try:
        return detect_schema(config, all_schemas()).schema
    except Exception:  # noqa: BLE001 - a config our parser cannot read is simply none of ours
        return None


def _found(project: Mapping[str, Any], created: bool = False) -> FoundProject:
    return FoundProject(int(project["id"]), str(project.get("title") or ""), project_schema(project), created)


def _listing(projects: Iterable[Mapping[str, Any]]) -> str:
    projects = list(projects)
    shown = ", ".join(f"{p['id']} {str(p.get('title') or '')!r}" for p in projects[:MAX_LISTED])
    more = f" and {len(projects) - MAX_LISTED} more" if len(projects) > MAX_LISTED else ""
    return f" (projects: {shown}{more})" if projects else " (Label Studio has no project yet)"


def check_schema(found: FoundProject, schema: Schema | None, *, needed_for: str | None = None) -> FoundProject:
    """``found`` when it is of ``schema`` (any project when None); a :class:`SchemaMismatch` else.

    ``needed_for`` (e.g. ``"importing tasks"``) refuses a project whose config is of its own.
    """
    if schema is not None and found.schema is not None and found.schema.name != schema.name:
        raise SchemaMismatch(
            f"{found.label()}: its label config is the {found.schema.name} schema, not {schema.name}; "
            "name another project or leave --schema out"
        )
    if found.schema is None and (schema is not None or needed_for):
        names = ", ".join(all_schemas())
        what = f"schema {schema.name}" if schema is not None else f"a schema for {needed_for}"
        raise SchemaMismatch(
            f"{found.label()}: its label config is none of the judgelab schemas ({names}), so it is not {what}"
        )
    return found


def find_project(
    client: Any, ref: ProjectRef, *, needed_for: str | None = None, projects: list[dict[str, Any]] | None = None
) -> FoundProject | None:
    """The project ``ref`` names, checked against ``ref.schema``; None when no project answers.

    Raises :class:`AmbiguousProject` when several do and :class:`SchemaMismatch` when the one
    that does is of another schema. ``projects``: Label Studio's listing, when the caller has it.
    """
    if projects is None:
        projects = as_api(client).projects()
    if ref.project_id is not None:
        match = [p for p in projects if int(p["id"]) == ref.project_id]
        return check_schema(_found(match[0]), ref.schema, needed_for=needed_for) if match else None
    if ref.title is not None:
        exact = [p for p in projects if p.get("title") == ref.title]
        titled = exact or [p for p in projects if has_title(p, ref.title)]
        candidates = [_found(p) for p in sorted(titled, key=lambda p: int(p["id"]))]
        if ref.schema is not None and len(candidates) > 1:
            of_schema = [c for c in candidates if c.schema is not None and c.schema.name == ref.schema.name]
            candidates = of_schema or candidates[:1]
        if len(candidates) > 1:
            listed = ", ".join(f"{c.id} ({c.schema_name})" for c in candidates)
            raise AmbiguousProject(
                f"{len(candidates)} projects are titled {ref.title!r}: {listed}; "
                "name one with --project ID" + ("" if ref.schema else " or add --schema")
            )
        return check_schema(candidates[0], ref.schema, needed_for=needed_for) if candidates else None
    if ref.schema is None:
        raise SyncError("name a project: --project ID, --title TITLE or --schema NAME")
    defaults = [p for p in projects if is_schema_default(p, ref.schema)]
    exact = [p for p in defaults if p.get("title") == ref.schema.title]
    chosen = (exact or defaults)[:1]
    return check_schema(_found(chosen[0]), ref.schema, needed_for=needed_for) if chosen else None


def require_project(
    client: Any, ref: ProjectRef, *, needed_for: str | None = None, projects: list[dict[str, Any]] | None = None
) -> FoundProject:
    """Like :func:`find_project`, but a :class:`ProjectNotFound` listing the projects there are."""
    if projects is None:
        projects = as_api(client).projects()
    found = find_project(client, ref, needed_for=needed_for, projects=projects)
    if found is None:
        hint = ""
        if ref.title is None and ref.project_id is None and ref.schema is not None:
            hint = f"; create it with: judgelab create --schema {ref.schema.name}"
        near = similar_projects(projects, ref.title) if ref.title is not None else []
        if near:  # only suggested: a near title may be another study's
            raise ProjectNotFound(f"no {ref.describe()} in Label Studio; {_did_you_mean(ref.title, near)}")
        raise ProjectNotFound(f"no {ref.describe()} in Label Studio{hint}{_listing(projects)}")
    return found


def _did_you_mean(title: str, near: list[Mapping[str, Any]]) -> str:
    """The projects ``near`` ``title``, offered by their exact titles and ids (a title is matched
    exactly: the user gives one of these, or its id with --project)."""
    how = (
        "reads the same but for case, accents, dashes or spaces"
        if _same_title(near, title)
        else "close to the title given"
    )
    shown = " or ".join(f"{str(p.get('title') or '')!r} (project {p['id']})" for p in near)
    first = near[0]
    return (
        f"did you mean {shown}? ({how}; titles are matched exactly: "
        f"give --title {_shell_quoted(str(first.get('title') or ''))} or --project {first['id']})"
    )


def _same_title(projects: list[Mapping[str, Any]], title: str) -> bool:
    """Whether each of ``projects`` answers to ``title`` but for case, accents, dashes or spaces."""
    key = title_key(title)
    return bool(projects) and all(any(title_key(t) == key for t in project_titles(p)) for p in projects)


def _shell_quoted(text: str) -> str:
    """``text`` as a shell reads it back: in double quotes unless it holds what they expand."""
    import shlex

    return f'"{text}"' if not set(text) & set('"$`\\!') else shlex.quote(text)


def ensure_named_project(client: Any, ref: ProjectRef, schema: Schema | None = None) -> FoundProject:
    """The project ``ref`` names, created (SDK ``client``) when a title or the schema's default
    names one that does not exist yet. ``schema`` (e.g. implied by a file's format) stands in
    for ``ref.schema``; a project of another schema is an error, never a second project."""
    from judgelab.sync.projects import ensure_project

    wanted = ref.schema or schema
    if ref.schema is not None and schema is not None and ref.schema.name != schema.name:
        raise SchemaMismatch(f"--schema {ref.schema.name} but the tasks are {schema.name} tasks")
    named = ProjectRef(ref.project_id, ref.title, wanted)
    listed = as_api(client).projects()
    found = find_project(client, named, needed_for="its tasks", projects=listed)
    if found is not None:
        return found
    if ref.project_id is not None:
        raise ProjectNotFound(f"no project {ref.project_id} in Label Studio{_listing(listed)}")
    same = similar_projects(listed, ref.title) if ref.title is not None else []
    if ref.title is not None and _same_title(same, ref.title):
        # a second project whose title reads the same would be told apart by no one
        raise SyncError(f"no project titled {ref.title!r}, so none was created; {_did_you_mean(ref.title, same)}")
    if wanted is None:
        raise SyncError(f"no project titled {ref.title!r} yet: add --schema to create it")
    made = ensure_project(client, wanted, ref.title, projects=listed)
    return FoundProject(made.id, made.title, wanted, created=made.created)


def judgelab_projects(
    client: Any, schemas: Iterable[Schema] | None = None, projects: list[dict[str, Any]] | None = None
) -> list[FoundProject]:
    """Every project created by judgelab (its description carries the schema marker), in id
    order, optionally only those whose label config is one of ``schemas``."""
    wanted = {s.name for s in schemas} if schemas is not None else None
    out = []
    for project in sorted(as_api(client).projects() if projects is None else projects, key=lambda p: int(p["id"])):
        if project_schema_name(project) is None:
            continue
        found = _found(project)
        if wanted is None or (found.schema is not None and found.schema.name in wanted):
            out.append(found)
    return out


def resolve_projects(
    client: Any,
    project_ids: Iterable[int] = (),
    titles: Iterable[str] = (),
    schemas: Iterable[Schema] = (),
    *,
    default: str = "all",
) -> list[FoundProject]:
    """The projects a command that may work on several is given (each checked; none twice).

    Named ones (``project_ids``, ``titles``) with at most one schema to check them against; with
    none named, ``default="schemas"`` gives each given schema's own project (it must exist), or,
    with no schema given, those of the five that exist; ``default="all"`` gives every judgelab
    project (of ``schemas``, when given).
    """
    project_ids, titles, schemas = list(project_ids), list(titles), list(schemas)
    if (project_ids or titles) and len(schemas) > 1:
        raise SyncError("with --project or --title, give at most one --schema (the projects' schema)")
    listed = as_api(client).projects()  # once for every project named
    if project_ids or titles:
        schema = schemas[0] if schemas else None
        refs = [ProjectRef(project_id=i, schema=schema) for i in project_ids]
        refs += [ProjectRef(title=t, schema=schema) for t in titles]
        found = [require_project(client, ref, projects=listed) for ref in refs]
    elif default == "all":
        found = judgelab_projects(client, schemas or None, projects=listed)
        if not found:
            which = f" of schema {', '.join(s.name for s in schemas)}" if schemas else ""
            raise ProjectNotFound(
                f"no judgelab project{which} in Label Studio: create one with judgelab create or judgelab import"
            )
    elif schemas:
        found = [require_project(client, ProjectRef(schema=s), projects=listed) for s in schemas]
    else:
        refs = [ProjectRef(schema=s) for s in all_schemas().values()]
        found = [f for ref in refs if (f := find_project(client, ref, projects=listed)) is not None]
        if not found:
            raise ProjectNotFound(
                "no schema has its own project in Label Studio yet: create them with judgelab create, "
                "or name a project with --project or --title"
            )
    unique: dict[int, FoundProject] = {}
    for project in found:
        unique.setdefault(project.id, project)
    return list(unique.values())
