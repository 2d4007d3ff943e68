"""Where the sink's tests find PostgreSQL's server binaries: missing ones fail with the
command that installs them (the tests fail, never skip)."""

from __future__ import annotations

import pytest

from workers.sinks import pgserver
from workers.sinks.pgserver import PostgresMissing, server_bin_dir


def test_the_newest_debian_version_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgserver.glob, "glob", lambda _: [
        "/usr/lib/postgresql/9/bin/initdb", "/usr/lib/postgresql/15/bin/initdb",
        "/usr/lib/postgresql/13/bin/initdb"])
    assert str(server_bin_dir()) == "/usr/lib/postgresql/15/bin"


def test_missing_binaries_name_the_installer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pgserver.glob, "glob", lambda _: [])
    monkeypatch.setattr(pgserver.shutil, "which", lambda _: None)
    with pytest.raises(PostgresMissing, match=r"deploy/install-postgresql\.sh"):
        server_bin_dir()
