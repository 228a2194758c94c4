"""The suite's kept Label Studio state (tests/label_studio_cache.py): kept whole or not at all,
under a key that changes with Label Studio's packages and the boot code (not with a tool installed
beside them), and off when asked."""

from __future__ import annotations

from pathlib import Path

import label_studio_cache as cache
import pytest


@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(cache.CACHE_ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _state(folder: Path) -> None:
    (folder / "label-studio").mkdir()
    (folder / "label-studio" / "label_studio.sqlite3").write_bytes(b"db")
    (folder / cache.CREDENTIALS).write_text('{"token": "t"}')


def test_a_kept_state_is_found_under_the_current_key(cache_dir):
    assert cache.kept(cache.SQLITE) is None
    cache.keep(cache.SQLITE, _state)
    found = cache.kept(cache.SQLITE)
    assert found == cache_dir / cache.key() / cache.SQLITE
    assert (found / "label-studio" / "label_studio.sqlite3").read_bytes() == b"db"
    assert cache.kept(cache.POSTGRES) is None  # each kind on its own


def test_a_state_whose_writing_failed_or_is_incomplete_is_not_kept(cache_dir):
    def fails(folder: Path) -> None:
        _state(folder)
        raise OSError("disk full")

    cache.keep(cache.SQLITE, fails)
    cache.keep(cache.SQLITE, lambda folder: (folder / "half").write_text("no login"))
    assert cache.kept(cache.SQLITE) is None
    assert [p.name for p in (cache_dir / cache.key()).iterdir()] == []  # no staging folder left


def test_the_first_kept_state_stays_and_a_forgotten_one_goes(cache_dir):
    cache.keep(cache.SQLITE, _state)
    cache.keep(cache.SQLITE, lambda folder: (_state(folder), (folder / "second").write_text("x")))
    assert not (cache.kept(cache.SQLITE) / "second").exists()
    cache.forget(cache.SQLITE)
    assert cache.kept(cache.SQLITE) is None


def test_the_key_follows_the_boot_code_and_other_keys_states_are_removed(cache_dir, monkeypatch, tmp_path):
    cache.keep(cache.SQLITE, _state)
    old = cache.key()
    code = tmp_path / "checkout"
    for name in cache.BOOT_CODE:
        (code / name).parent.mkdir(parents=True, exist_ok=True)
        (code / name).write_bytes((cache.ROOT / name).read_bytes() + b"\n# changed\n")
    monkeypatch.setattr(cache, "ROOT", code)
    assert cache.key() != old
    assert cache.key().startswith("label-studio-1.")
    assert cache.kept(cache.SQLITE) is None  # a changed launcher migrates again
    cache.keep(cache.SQLITE, _state)
    assert sorted(p.name for p in cache_dir.iterdir()) == [cache.key()]


def test_off_keeps_nothing(cache_dir, monkeypatch):
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    cache.keep(cache.SQLITE, _state)
    assert cache.cache_folder() is None and cache.kept(cache.SQLITE) is None
    assert not cache_dir.exists()


def _installed(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> None:
    """A distribution's metadata as pip leaves it in site-packages (``name-version.dist-info``)."""
    info = folder / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    lines += [f"Requires-Dist: {line}" for line in requires]
    (info / "METADATA").write_text("\n".join(lines) + "\n")


def test_a_tool_installed_beside_label_studio_keeps_the_key(monkeypatch, tmp_path):
    before = cache.key()
    _installed(tmp_path / "site", "some-profiler", "9.9", ("a-library-of-its-own>=1",))
    _installed(tmp_path / "site", "a-library-of-its-own", "1.0")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert "some-profiler==9.9" not in cache.boot_distributions()
    assert cache.key() == before


@pytest.mark.parametrize("name", ["Django", "asgiref"])  # Label Studio's requirement, and one of Django's
def test_another_version_of_what_label_studio_requires_changes_the_key(monkeypatch, tmp_path, name):
    before = cache.key()
    assert any(line.startswith(f"{name.lower()}==") for line in cache.boot_distributions())
    _installed(tmp_path / "site", name, "0.0.1")  # found first on the path, as an upgrade would be
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    assert f"{name.lower()}==0.0.1" in cache.boot_distributions()
    assert cache.key() != before
