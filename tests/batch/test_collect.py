"""Finding submissions: folders, folders of folders, zips (wrapped, broken, hostile), ids safe as file names."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from harness.batch import collect as collect_module
from harness.batch.collect import collect
from harness.errors import HarnessError


NOT_PYTHON = "not a Python file: a submission is a .py file or a notebook, or a folder holding its entry file"


def _rows(subs):
    return [(s.id, s.path is not None, s.problem) for s in subs]


def test_a_folder_of_files_and_folders(tmp_path):
    root = tmp_path / "subs"
    (root / "bo").mkdir(parents=True)
    (root / "bo" / "solution.py").write_text("x = 1\n")
    (root / "cy").mkdir()
    (root / "cy" / "engine.py").write_text("x = 1\n")
    (root / "Al Smith.py").write_text("x = 1\n")
    (root / "al_smith.py").write_text("x = 1\n")
    (root / "notes.txt").write_text("")
    (root / ".hidden.py").write_text("")
    (root / "__pycache__").mkdir()
    out = tmp_path / "subs" / "out"
    out.mkdir()
    subs = collect(root, "solution.py", tmp_path / "scratch", exclude=out)
    assert _rows(subs) == [
        ("Al_Smith", True, ""), ("al_smith-2", True, ""), ("bo", True, ""),
        ("cy", False, "no solution.py in the folder (it holds engine.py; choose the file with --entry)"),
        ("notes", False, NOT_PYTHON),
    ]
    assert subs[2].origin == f"{root}/bo/solution.py" and subs[2].path == root / "bo" / "solution.py"
    assert [s.id for s in collect(root, "engine.py", tmp_path / "s2", exclude=out)][-2] == "cy"


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_a_zip_of_a_folder_is_unwrapped(tmp_path):
    archive = _zip(tmp_path / "subs.zip", {
        "cohort/ann.py": b"a = 1\n", "cohort/ben/solution.py": b"b = 2\n", "cohort/ben/helper.py": b"",
        "__MACOSX/cohort/._ann.py": b"junk", "cohort/.DS_Store": b"junk", "cohort/cleo.ipynb": b"{}",
        "cohort/dan.txt": b"",
    })
    scratch = tmp_path / "scratch"
    subs = collect(archive, "solution.py", scratch)
    not_python = NOT_PYTHON
    assert _rows(subs) == [("ann", True, ""), ("ben", True, ""), ("cleo", True, ""), ("dan", False, not_python)]
    assert subs[0].origin == f"{archive}:cohort/ann.py" and subs[1].origin == f"{archive}:cohort/ben/solution.py"
    assert subs[1].path.read_bytes() == b"b = 2\n" and scratch in subs[1].path.parents


def test_a_zip_unpacked_again_gives_the_same_rows(tmp_path):
    # A resume unpacks the zip into the same folder: nothing of the earlier run is in the way.
    archive = _zip(tmp_path / "subs.zip", {"ann.py": b"a = 1\n", "ben/solution.py": b"b = 2\n"})
    first = collect(archive, "solution.py", tmp_path / "s")
    (tmp_path / "s" / "stale.py").write_text("")
    assert collect(archive, "solution.py", tmp_path / "s") == first and first[1].path.read_text() == "b = 2\n"
    assert not (tmp_path / "s" / "stale.py").exists()


def test_a_zip_of_one_folder_submission_is_not_unwrapped(tmp_path):
    archive = _zip(tmp_path / "one.zip", {"ann/solution.py": b"a = 1\n"})
    assert _rows(collect(archive, "solution.py", tmp_path / "s")) == [("ann", True, "")]


def test_zip_names_cannot_leave_the_scratch_folder(tmp_path):
    archive = _zip(tmp_path / "evil.zip", {"../../escape.py": b"x = 1\n", "/abs/olute.py": b"y = 2\n",
                                          "a/../../b.py": b"z = 3\n"})
    scratch = tmp_path / "deep" / "scratch"
    subs = collect(archive, "solution.py", scratch)
    assert not (tmp_path / "escape.py").exists() and not (tmp_path / "deep" / "b.py").exists()
    for s in subs:
        assert s.path is None or scratch in s.path.resolve().parents
    assert "escape" in [s.id for s in subs]


def test_an_unreadable_member_still_gets_a_row(tmp_path, monkeypatch):
    archive = _zip(tmp_path / "subs.zip", {"ok.py": b"x = 1\n", "bad.py": b"y = 2\n" * 50, "big.py": b"#" * 5000})
    data = bytearray(archive.read_bytes())
    # corrupt bad.py's compressed bytes: its CRC check fails when read
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo("bad.py")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start:start + 4] = b"\xff\xff\xff\xff"
    archive.write_bytes(bytes(data))
    monkeypatch.setattr(collect_module, "MEMBER_BYTES", 4096)
    rows = {s.id: s for s in collect(archive, "solution.py", tmp_path / "s")}
    assert rows["ok"].path is not None and rows["ok"].problem == ""
    assert rows["bad"].path is None and rows["bad"].problem.startswith("cannot read bad.py from the zip: ")
    assert rows["big"].problem == "cannot read big.py from the zip: larger than 4 KiB"


def test_what_is_not_a_batch_is_a_usage_error(tmp_path):
    one = tmp_path / "one.py"
    one.write_text("x = 1\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    for path, message in [
        (one, f"{one}: not a folder or a .zip (to grade one file: grade {one})"),
        (tmp_path / "nope", f"{tmp_path / 'nope'}: no such folder or file"),
        (empty, f"{empty}: no submissions found (.py files, or folders holding solution.py)"),
    ]:
        with pytest.raises(HarnessError) as err:
            collect(path, "solution.py", tmp_path / "s")
        assert str(err.value) == message


def test_caps_apply_while_unpacking_and_leave_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setattr(collect_module, "SUBMISSION_BYTES", 3000)
    monkeypatch.setattr(collect_module, "ARCHIVE_BYTES", 5000)
    monkeypatch.setattr(collect_module, "ARCHIVE_MEMBERS", 6)
    archive = _zip(tmp_path / "subs.zip", {
        "a/solution.py": b"#" * 1000, "a/big.bin": b"\0" * 2500,  # over its submission's 3000 bytes
        "b/solution.py": b"#" * 2000, "c/solution.py": b"#" * 2000,  # b fits; c would pass the zip's 5000
        "d.py": b"", "e.py": b"", "f.py": b"", "g.py": b"",  # the fourth one past the zip's 6 files
    })
    scratch = tmp_path / "s"
    rows = {s.id: s.problem for s in collect(archive, "solution.py", scratch)}
    assert rows == {
        "a": "cannot unpack a/solution.py from the zip: the submission unpacks to more than 2 KiB",
        "b": "", "d": "", "e": "",
        "c": "not unpacked: the zip unpacks to more than 4 KiB in all",
        "f": "not unpacked: the zip holds more than 6 files in all",
        "g": "not unpacked: the zip holds more than 6 files in all",
    }
    assert sorted(p.relative_to(scratch).as_posix() for p in scratch.rglob("*")) == [
        ".unpacked-by-grade-batch", "b", "b/solution.py", "d.py", "e.py"]
    long = _zip(tmp_path / "long.zip", {"x" * 256 + ".py": b"", "ok.py": b""})
    assert [(s.id, s.problem) for s in collect(long, "solution.py", tmp_path / "s2")] == [
        ("ok", ""), ("x" * 100, f"cannot unpack {'x' * 256}.py from the zip: its name is too long or clashes with "
                                "another member's")]
