"""reference/plugins.md §13–§15: read windows, read-before-edit, atomic writes, vetoes and the fence.

A file that exists may be overwritten or edited only after this agent read it and only while it is
unchanged since; a write is atomic (no partial file on failure); ``fs_write_intent`` vetoes come
after the sandbox fence; the fence judges the path its symlinks lead to.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from harness_core import hookimpl

from .support import Answerer, FakeSandbox, code, run, text

pytestmark = pytest.mark.anyio

OP_HINT = (
    "[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest "
    "wider mode that suffices) + justification; the approval prompt asks the user]"
)


def numbered(path: Path, lines: list[str], footer: str) -> str:
    body = "".join(lines)
    return f"<path>{path}</path>\n<type>file</type>\n<content>\n{body}\n{footer}\n</content>"


# --- read ------------------------------------------------------------------------------------------


async def test_read_shows_numbered_lines_and_the_end_of_file(make_harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\ntwo\r\nthree")
    result = await run(make_harness(), "read", file_path="a.txt")
    assert text(result) == numbered(
        workspace / "a.txt", ["1: one\n", "2: two\n", "3: three\n"], "(End of file - total 3 lines)"
    )
    assert result.value["total_lines"] == 3


async def test_read_windows_with_offset_and_limit(make_harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    result = await run(make_harness(), "read", file_path=str(workspace / "a.txt"), offset=4, limit=3)
    assert text(result) == numbered(
        workspace / "a.txt",
        ["4: line 4\n", "5: line 5\n", "6: line 6\n"],
        "(Showing lines 4-6 of 10. Use offset=7 to continue.)",
    )


async def test_read_caps_bytes_and_cuts_long_lines(make_harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x" * 50 + "\n" + "".join(f"{n}\n" for n in range(2, 100)))
    harness = make_harness(read_max_line_length=10, read_max_bytes=60)
    result = await run(harness, "read", file_path="a.txt")
    first = "1: xxxxxxxxxx... (line truncated to 10 chars)\n"
    assert text(result) == numbered(
        workspace / "a.txt", [first, "2: 2\n", "3: 3\n"], "(Output capped. Showing lines 1-3. Use offset=4 to continue.)"
    )
    assert result.value["capped"] is True


async def test_read_of_an_empty_file_and_past_the_end(make_harness, workspace: Path) -> None:
    (workspace / "empty").write_text("")
    (workspace / "two").write_text("a\nb\n")
    harness = make_harness()
    assert text(await run(harness, "read", file_path="empty")).endswith("<content>\n\n(End of file - total 0 lines)\n</content>")
    past = await run(harness, "read", file_path="two", offset=3)
    assert text(past) == f'Error: offset 3 is out of range for "{workspace / "two"}" (2 lines)'


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"file_path": ""}, "file_path must be a non-empty string"),
        ({"file_path": "a", "offset": 0}, "offset must be a positive integer"),
        ({"file_path": "a", "limit": 1.5}, "limit must be a positive integer"),
        ({"file_path": "a", "limit": 2001}, "limit must be less than or equal to 2000"),
    ],
)
async def test_read_refuses_malformed_arguments(make_harness, arguments, message) -> None:
    result = await run(make_harness(), "read", **arguments)
    assert text(result) == f"Error: {message}" and code(result) == "INVALID_ARGS"


async def test_read_of_a_missing_path_a_folder_a_binary_or_a_huge_file_says_why(make_harness, workspace: Path) -> None:
    (workspace / "folder").mkdir()
    (workspace / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    (workspace / "huge.log").write_bytes(b"x\n" * 600)
    harness = make_harness(read_max_file_bytes=1000)
    missing = await run(harness, "read", file_path="nope.txt")
    assert (code(missing), text(missing)) == ("FS_NOT_FOUND", f'Error: cannot read "{workspace / "nope.txt"}": not found')
    folder = await run(harness, "read", file_path="folder")
    assert (code(folder), text(folder)) == (
        "FS_NOT_REGULAR_FILE",
        f'Error: cannot read "{workspace / "folder"}": not a regular file',
    )
    binary = await run(harness, "read", file_path="blob.bin")
    assert code(binary) == "FS_NOT_TEXT" and "it is a binary file (16 bytes); read shows text only" in text(binary)
    huge = await run(harness, "read", file_path="huge.log")
    assert code(huge) == "FS_TOO_LARGE"
    assert "the file is 1200 bytes, over the 1000-byte limit of read ([tools] read_max_file_bytes)" in text(huge)
    assert "bash (head, tail" in text(huge)


async def test_read_streams_a_large_file_to_a_window_near_its_end(make_harness, workspace: Path) -> None:
    with (workspace / "big.txt").open("w") as handle:
        for n in range(1, 300_001):
            handle.write(f"row {n}\n")
    result = await run(make_harness(), "read", file_path="big.txt", offset=299_999)
    assert text(result).endswith("299999: row 299999\n300000: row 300000\n\n(End of file - total 300000 lines)\n</content>")


async def test_read_decodes_invalid_utf8_with_replacement(make_harness, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    assert "1: caf\ufffd\n" in text(await run(make_harness(), "read", file_path="latin1.txt"))


async def test_read_records_fs_observed_events(make_harness, workspace: Path, sink) -> None:
    (workspace / "a.txt").write_text("hi\n")
    harness = make_harness()
    await run(harness, "read", file_path="a.txt")
    await run(harness, "read", file_path="gone.txt")
    present, absent = sink.of_kind("fs/observed")
    assert present["path"] == str(workspace / "a.txt") and present["state"] == "present" and present["tool"] == "read"
    assert present["sha256"] == "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4"
    assert present["size"] == 3 and isinstance(present["mtime"], float)
    assert absent == {"call_id": absent["call_id"], "tool": "read", "path": str(workspace / "gone.txt"), "state": "absent"}


# --- write ------------------------------------------------------------------------------------------


async def test_write_creates_a_file_and_may_then_update_it_without_reading(make_harness, workspace: Path) -> None:
    harness = make_harness()
    created = await run(harness, "write", file_path="new.txt", content="v1\n")
    assert text(created) == f"<path>{workspace / 'new.txt'}</path>\n<type>file</type>\n<content>\nCreated file\n</content>"
    updated = await run(harness, "write", file_path="new.txt", content="v2\n")
    assert "Updated file" in text(updated) and updated.value["operation"] == "update"
    assert (workspace / "new.txt").read_text() == "v2\n"


async def test_write_refuses_to_overwrite_a_file_this_agent_never_read(make_harness, workspace: Path) -> None:
    (workspace / "a.txt").write_text("theirs\n")
    harness = make_harness()
    result = await run(harness, "write", file_path="a.txt", content="mine\n")
    assert code(result) == "FS_NOT_OBSERVED"
    assert text(result) == f'Error: cannot overwrite existing "{workspace / "a.txt"}" without reading it first — read the file, then retry'
    await run(harness, "read", file_path="a.txt", agent="other")
    assert code(await run(harness, "write", file_path="a.txt", content="mine\n")) == "FS_NOT_OBSERVED"
    await run(harness, "read", file_path="a.txt")
    assert not (await run(harness, "write", file_path="a.txt", content="mine\n")).is_error
    assert (workspace / "a.txt").read_text() == "mine\n"


async def test_write_after_an_external_change_is_a_stale_version(make_harness, workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("v1\n")
    harness = make_harness()
    await run(harness, "read", file_path="a.txt")
    target.write_text("changed by someone else\n")
    result = await run(harness, "write", file_path="a.txt", content="mine\n")
    assert code(result) == "FS_STALE_VERSION"
    assert text(result) == f'Error: cannot write "{target}": file changed since it was read — re-read the file, then retry'
    assert target.read_text() == "changed by someone else\n"
    target.unlink()
    gone = await run(harness, "write", file_path="a.txt", content="mine\n")
    assert text(gone) == f'Error: cannot write "{target}": file no longer exists — re-read the file, then retry'


async def test_write_into_a_missing_folder_is_refused_and_creates_nothing(make_harness, workspace: Path) -> None:
    result = await run(make_harness(), "write", file_path="no/such/dir/a.txt", content="x")
    assert code(result) == "FS_NOT_FOUND"
    assert f'the folder "{workspace / "no/such/dir"}" does not exist; create it first' in text(result)
    assert not (workspace / "no").exists()


async def test_write_keeps_the_file_mode_and_leaves_no_temporary_file(make_harness, workspace: Path) -> None:
    target = workspace / "run.sh"
    target.write_text("#!/bin/sh\n")
    target.chmod(0o751)
    harness = make_harness()
    await run(harness, "read", file_path="run.sh")
    await run(harness, "write", file_path="run.sh", content="#!/bin/sh\necho hi\n")
    assert (target.stat().st_mode & 0o777) == 0o751
    assert sorted(p.name for p in workspace.iterdir()) == ["run.sh"]


@pytest.mark.parametrize("existing", [True, False])
async def test_a_failing_write_leaves_the_old_file_whole_and_no_partial_file(
    make_harness, workspace: Path, monkeypatch, existing: bool
) -> None:
    target = workspace / "a.txt"
    harness = make_harness()
    if existing:
        target.write_text("old content\n")
        await run(harness, "read", file_path="a.txt")

    def broken_fsync(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    result = await run(harness, "write", file_path="a.txt", content="new content " * 1000)
    monkeypatch.undo()
    assert result.is_error and "No space left on device" in text(result)
    assert sorted(p.name for p in workspace.iterdir()) == (["a.txt"] if existing else [])
    if existing:
        assert target.read_text() == "old content\n"


async def test_write_through_a_symlink_updates_the_target_and_keeps_the_link(make_harness, workspace: Path) -> None:
    (workspace / "real.txt").write_text("v1\n")
    (workspace / "link.txt").symlink_to("real.txt")
    harness = make_harness()
    await run(harness, "read", file_path="link.txt")
    assert not (await run(harness, "write", file_path="link.txt", content="v2\n")).is_error
    assert (workspace / "link.txt").is_symlink() and (workspace / "real.txt").read_text() == "v2\n"


# --- edit -------------------------------------------------------------------------------------------


async def test_edit_replaces_one_occurrence_after_a_read(make_harness, workspace: Path) -> None:
    target = workspace / "a.py"
    target.write_text("x = 1\ny = 2\n")
    harness = make_harness()
    await run(harness, "read", file_path="a.py", limit=1)  # any window authorizes the whole file
    result = await run(harness, "edit", file_path="a.py", old_string="y = 2", new_string="y = 3")
    assert text(result) == f"The file {target} has been updated successfully."
    assert target.read_text() == "x = 1\ny = 3\n"


async def test_edit_without_a_read_and_of_a_file_read_as_missing(make_harness, workspace: Path) -> None:
    (workspace / "a.py").write_text("x = 1\n")
    harness = make_harness()
    unread = await run(harness, "edit", file_path="a.py", old_string="1", new_string="2")
    assert code(unread) == "FS_NOT_OBSERVED"
    assert text(unread) == f'Error: edit requires reading "{workspace / "a.py"}" first — read the file, then retry'
    await run(harness, "read", file_path="b.py")
    absent = await run(harness, "edit", file_path="b.py", old_string="1", new_string="2")
    assert (code(absent), text(absent)) == ("FS_NOT_FOUND", f'Error: cannot edit "{workspace / "b.py"}": not found')


async def test_edit_after_an_external_change_or_removal_is_a_stale_version(make_harness, workspace: Path) -> None:
    target = workspace / "a.py"
    target.write_text("x = 1\n")
    harness = make_harness()
    await run(harness, "read", file_path="a.py")
    target.write_text("x = 1  # touched\n")
    stale = f'Error: cannot edit "{target}": file changed since it was read — re-read the file, then retry'
    result = await run(harness, "edit", file_path="a.py", old_string="x = 1", new_string="x = 2")
    assert (code(result), text(result)) == ("FS_STALE_VERSION", stale)
    assert target.read_text() == "x = 1  # touched\n"
    await run(harness, "read", file_path="a.py")
    target.unlink()
    assert text(await run(harness, "edit", file_path="a.py", old_string="x", new_string="y")) == stale


async def test_edit_needs_old_string_once_unless_replace_all(make_harness, workspace: Path) -> None:
    target = workspace / "a.txt"
    target.write_text("a-a-a\n")
    harness = make_harness()
    await run(harness, "read", file_path="a.txt")
    missing = await run(harness, "edit", file_path="a.txt", old_string="b", new_string="c")
    assert (code(missing), text(missing)) == ("FS_EDIT_NOT_FOUND", f'Error: old_string was not found in "{target}"')
    several = await run(harness, "edit", file_path="a.txt", old_string="a", new_string="c")
    assert code(several) == "FS_AMBIGUOUS_EDIT"
    assert text(several) == (
        f'Error: old_string matched 3 times in "{target}"; provide a more specific old_string or set replace_all to true'
    )
    every = await run(harness, "edit", file_path="a.txt", old_string="a", new_string="c", replace_all=True)
    assert text(every) == f"The file {target} has been updated. All occurrences were successfully replaced."
    assert every.value["replacements"] == 3 and target.read_text() == "c-c-c\n"
    # The tool's own edit refreshed what this agent saw: a second edit needs no new read.
    assert not (await run(harness, "edit", file_path="a.txt", old_string="c-c", new_string="d")).is_error
    assert target.read_text() == "d-c\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"old_string": "", "new_string": "x"}, "old_string must be a non-empty string"),
        ({"old_string": "x", "new_string": "x"}, "old_string and new_string must differ"),
        ({"old_string": "x", "new_string": 3}, "new_string must be a string"),
        ({"old_string": "x", "new_string": "y", "replace_all": "yes"}, "replace_all must be a boolean"),
    ],
)
async def test_edit_refuses_malformed_arguments(make_harness, arguments, message) -> None:
    result = await run(make_harness(), "edit", file_path="a.txt", **arguments)
    assert text(result) == f"Error: {message}"


async def test_edit_of_a_non_utf8_file_is_refused(make_harness, workspace: Path) -> None:
    (workspace / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    harness = make_harness()
    await run(harness, "read", file_path="latin1.txt")
    result = await run(harness, "edit", file_path="latin1.txt", old_string="caf", new_string="tea")
    assert code(result) == "FS_NOT_TEXT"


# --- fs_write_intent ----------------------------------------------------------------------------------


class Veto:
    """A policy plugin vetoing mutations of ``locked.txt``, recording what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    @hookimpl
    def fs_write_intent(self, execution, path, operation):
        self.asked.append((execution.name, path, operation))
        return "locked.txt is frozen by policy" if path.endswith("locked.txt") else None


async def test_fs_write_intent_vetoes_write_and_edit_before_the_disk_is_touched(make_harness, workspace: Path) -> None:
    locked = workspace / "locked.txt"
    locked.write_text("keep\n")
    veto = Veto()
    harness = make_harness(veto)
    await run(harness, "read", file_path="locked.txt")
    write = await run(harness, "write", file_path="locked.txt", content="x")
    assert code(write) == "FS_INTENT_DENIED"
    assert text(write) == f'Error: cannot write "{locked}": locked.txt is frozen by policy'
    edit = await run(harness, "edit", file_path="locked.txt", old_string="keep", new_string="x")
    assert text(edit) == f'Error: cannot edit "{locked}": locked.txt is frozen by policy'
    assert locked.read_text() == "keep\n"
    assert not (await run(harness, "write", file_path="free.txt", content="x")).is_error
    assert veto.asked == [
        ("write", str(locked), "write"),
        ("edit", str(locked), "edit"),
        ("write", str(workspace / "free.txt"), "write"),
    ]


async def test_a_raising_fs_write_intent_denies(make_harness, workspace: Path) -> None:
    class Broken:
        @hookimpl
        def fs_write_intent(self):
            raise RuntimeError("policy store offline")

    result = await run(make_harness(Broken()), "write", file_path="a.txt", content="x")
    assert code(result) == "FS_INTENT_DENIED"
    assert 'fs_write_intent of plugin "' in text(result) and "RuntimeError: policy store offline" in text(result)
    assert not (workspace / "a.txt").exists()


# --- the sandbox fence ----------------------------------------------------------------------------------


async def test_read_only_denies_every_mutation_with_the_marker_and_hint(make_harness, workspace: Path) -> None:
    harness = make_harness(FakeSandbox(workspace, mode="read-only"), Answerer("rejected"))
    result = await run(harness, "write", file_path="a.txt", content="x")
    assert code(result) == "FS_SANDBOX_DENIED"
    assert text(result) == f"Error: [sandbox: file access denied under read-only mode]\n{OP_HINT}"
    assert not (workspace / "a.txt").exists()


async def test_the_fence_comes_before_the_veto_and_the_version_check(make_harness, workspace: Path) -> None:
    (workspace / "locked.txt").write_text("never read\n")
    veto = Veto()
    harness = make_harness(FakeSandbox(workspace, mode="read-only"), veto)
    result = await run(harness, "write", file_path="locked.txt", content="x")
    assert text(result) == "Error: [sandbox: file access denied under read-only mode]"  # no approver: no hint
    assert veto.asked == []


async def test_workspace_write_allows_the_workspace_and_denies_outside(make_harness, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    harness = make_harness(FakeSandbox(workspace, mode="workspace-write"))
    assert not (await run(harness, "write", file_path="in.txt", content="x")).is_error
    denied = await run(harness, "write", file_path=str(outside / "out.txt"), content="x")
    assert text(denied) == "Error: [sandbox: file access denied under workspace-write mode]"
    dotted = await run(harness, "write", file_path="../outside/out.txt", content="x")
    assert code(dotted) == "FS_SANDBOX_DENIED"
    assert list(outside.iterdir()) == []


async def test_a_symlink_pointing_out_of_the_workspace_is_denied(make_harness, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "target.txt").write_text("outside\n")
    (workspace / "escape").symlink_to(outside)
    (workspace / "file-link").symlink_to(outside / "target.txt")
    (workspace / "dangling").symlink_to(outside / "new.txt")
    harness = make_harness(FakeSandbox(workspace, mode="workspace-write"))
    await run(harness, "read", file_path="file-link")
    for path in ("escape/new.txt", "file-link", "dangling"):
        result = await run(harness, "write", file_path=path, content="pwned")
        assert code(result) == "FS_SANDBOX_DENIED", path
    edit = await run(harness, "edit", file_path="file-link", old_string="outside", new_string="pwned")
    assert code(edit) == "FS_SANDBOX_DENIED"
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert (outside / "target.txt").read_text() == "outside\n"


async def test_an_approved_escalation_lets_one_write_through_the_fence(make_harness, workspace: Path, tmp_path: Path) -> None:
    answerer = Answerer("allowed-once")
    harness = make_harness(FakeSandbox(workspace, mode="read-only"), answerer)
    why = "the user asked for this config file"
    result = await run(
        harness, "write", file_path="a.txt", content="x", sandbox_permissions="workspace-write", justification=why
    )
    assert not result.is_error and (workspace / "a.txt").read_text() == "x"
    assert [request.reason for request in answerer.requests] == [f"escalate sandbox to workspace-write: {why}"]
    assert answerer.requests[0].tool_name == "write"
    again = await run(harness, "write", file_path="a.txt", content="y")
    assert code(again) == "FS_SANDBOX_DENIED"


async def test_a_rejected_fs_escalation_writes_nothing(make_harness, workspace: Path) -> None:
    harness = make_harness(FakeSandbox(workspace, mode="read-only"), Answerer("rejected"))
    result = await run(
        harness, "edit", file_path="a.txt", old_string="a", new_string="b",
        sandbox_permissions="workspace-write", justification="needed",
    )
    assert text(result) == 'Error: the user rejected escalating this operation to "workspace-write"'


async def test_fs_escalation_arguments_without_a_confining_sandbox_are_refused(make_harness, workspace: Path) -> None:
    result = await run(
        make_harness(), "write", file_path="a.txt", content="x", sandbox_permissions="workspace-write", justification="x"
    )
    assert text(result) == (
        "Error: sandbox_permissions is not available in this composition (no sandboxing filesystem to escalate)"
    )
    assert not (workspace / "a.txt").exists()


async def test_relative_paths_resolve_against_the_policy_workspace_root(make_harness, tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    harness = make_harness(FakeSandbox(root, mode="workspace-write"))
    assert not (await run(harness, "write", file_path="a.txt", content="x")).is_error
    assert (root / "a.txt").read_text() == "x"
