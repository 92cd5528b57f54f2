"""`loom.files`: a file given as the content of another is hard-linked, not copied (an apply
keeps 15 MB of tables in its journal and its records), and the result is as atomic and as
independent of later writes as a copy."""

from __future__ import annotations

import errno
import os

import pytest

from loom import files
from loom.files import TEMP_PREFIX, write_all_atomic, write_atomic


def test_a_file_given_as_content_is_linked_and_outlives_its_source_being_replaced(tmp_path):
    source, kept = tmp_path / "lfts.dump", tmp_path / "journal" / "previous_lfts"
    write_atomic(source, "old tables\n")
    write_all_atomic({kept: source, tmp_path / "note": "text\n"})
    assert kept.read_text() == "old tables\n" and os.stat(kept).st_ino == os.stat(source).st_ino
    write_atomic(source, "new tables\n")  # the apply writes the new inputs by rename
    assert kept.read_text() == "old tables\n" and source.read_text() == "new tables\n"
    assert not list(tmp_path.rglob(f"{TEMP_PREFIX}*"))


def test_where_no_link_can_be_made_the_content_is_copied(tmp_path, monkeypatch):
    source, kept = tmp_path / "a", tmp_path / "b"
    source.write_text("tables\n")

    def refused(*_a, **_k):
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(files.os, "link", refused)
    write_all_atomic({kept: source})
    assert kept.read_text() == "tables\n" and os.stat(kept).st_ino != os.stat(source).st_ino


def test_a_source_that_is_not_a_regular_file_is_refused_and_nothing_changes(tmp_path):
    fifo, target = tmp_path / "fifo", tmp_path / "target"
    os.mkfifo(fifo)
    target.write_text("before\n")
    with pytest.raises(OSError):
        write_all_atomic({target: fifo, tmp_path / "other": "x"})  # must not block on the FIFO either
    assert target.read_text() == "before\n" and not (tmp_path / "other").exists()
    assert not list(tmp_path.glob(f"{TEMP_PREFIX}*"))


def test_a_symlinked_source_gives_its_target_content_as_a_copy(tmp_path):
    real, link, kept = tmp_path / "real", tmp_path / "link", tmp_path / "kept"
    real.write_text("tables\n")
    link.symlink_to(real)
    write_all_atomic({kept: link})
    assert kept.read_text() == "tables\n" and not kept.is_symlink() and os.stat(kept).st_ino != os.stat(real).st_ino
