"""DESIGN §4: the session log — one JSON object per line, never interleaved, torn tails tolerated, values never logged."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness_core import Harness, HarnessError, ImageBlock, TextBlock, ToolCall, ToolDefinition, ToolOutput
from harness_core.events import EventSink
from harness_core.session_log import (
    LoggedEvent,
    SessionLog,
    SessionLogError,
    find_session,
    follow_session,
    list_sessions,
    new_session_id,
    read_session,
    render_card,
)

TIME_FORMAT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_events(path: Path, count: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with SessionLog(path.parent, path.stem) as log:
        for index in range(count):
            log.append("tool/call", {"call_id": f"c{index}", "name": "echo", "arguments": {}})


# --- Writing ------------------------------------------------------------------------------------


def test_new_session_ids_are_a_utc_timestamp_and_six_hex_characters_and_sort_by_time() -> None:
    first = new_session_id()
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", first)
    assert first[:16] <= new_session_id()[:16]
    assert first != new_session_id()


def test_a_session_log_is_an_event_sink_that_creates_its_directory_on_first_append(tmp_path: Path) -> None:
    directory = tmp_path / "deep" / "sessions"
    log = SessionLog(directory, "s1")
    assert isinstance(log, EventSink)
    assert log.session_id == "s1" and log.path == directory / "s1.jsonl"
    assert not directory.exists()
    log.append("hook/invoked", {"hook": "PreToolUse"})
    log.close()
    assert log.path.is_file()


def test_each_event_is_one_compact_line_with_seq_time_type_and_data(tmp_path: Path) -> None:
    with SessionLog(tmp_path) as log:
        log.append("tool/call", {"call_id": "c1", "name": "echo", "arguments": {"text": "héllo"}})
        log.append("hook/invoked", {"hook": "PreToolUse"})
    text = log.path.read_text(encoding="utf-8")
    assert text.count("\n") == 2 and text.endswith("\n")
    first_line = text.splitlines()[0]
    assert first_line.startswith('{"seq":0,"time":"') and "héllo" in first_line and ", " not in first_line
    first, second = lines_of(log.path)
    assert [first["seq"], second["seq"]] == [0, 1]
    assert TIME_FORMAT.match(first["time"]) and TIME_FORMAT.match(second["time"])
    assert first["type"] == "tool/call" and first["data"] == {
        "call_id": "c1",
        "name": "echo",
        "arguments": {"text": "héllo"},
    }
    assert second == {"seq": 1, "time": second["time"], "type": "hook/invoked", "data": {"hook": "PreToolUse"}}


def test_content_blocks_are_written_as_their_json(tmp_path: Path) -> None:
    image = ImageBlock(attachment_id="a1", media_type="image/png", size_bytes=10, width=4, height=3)
    with SessionLog(tmp_path) as log:
        log.append("tool/result", {"call_id": "c1", "content": (TextBlock(text="hi"), image), "error": None})
    (line,) = lines_of(log.path)
    assert line["data"]["content"] == [{"type": "text", "text": "hi"}, image.to_json()]


@pytest.mark.parametrize("bad", [object(), float("nan"), {1, 2}])
def test_data_that_is_not_json_raises_type_error_naming_the_kind_and_writes_nothing(
    tmp_path: Path, bad: object
) -> None:
    with SessionLog(tmp_path) as log:
        log.append("hook/invoked", {"hook": "ok"})
        with pytest.raises(TypeError, match='cannot log event "fs/observed"'):
            log.append("fs/observed", {"when": bad})
        log.append("hook/invoked", {"hook": "still ok"})
    assert [line["seq"] for line in lines_of(log.path)] == [0, 1]


def test_the_value_of_a_tool_result_is_dropped_before_writing(tmp_path: Path) -> None:
    with SessionLog(tmp_path) as log:
        log.append("tool/result", {"call_id": "c1", "content": (), "value": "the-canonical-value"})
        log.append("fs/observed", {"value": 3})
    assert "the-canonical-value" not in log.path.read_text(encoding="utf-8")
    result, other = lines_of(log.path)
    assert result["data"] == {"call_id": "c1", "content": []}
    assert other["data"] == {"value": 3}


def test_appending_after_close_raises_and_close_is_idempotent(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    log.append("hook/invoked", {})
    log.close()
    log.close()
    with pytest.raises(ValueError, match="closed"):
        log.append("hook/invoked", {})


def test_reusing_a_session_id_continues_the_numbering(tmp_path: Path) -> None:
    write_events(tmp_path / "s1.jsonl", 3)
    write_events(tmp_path / "s1.jsonl", 2)
    assert [event.seq for event in read_session(tmp_path / "s1.jsonl").events] == [0, 1, 2, 3, 4]


def test_eight_threads_appending_at_once_write_whole_lines_with_unique_seqs(tmp_path: Path) -> None:
    log = SessionLog(tmp_path)
    start = threading.Barrier(8)

    def worker(thread: int) -> None:
        start.wait()
        for index in range(200):
            log.append("hook/invoked", {"thread": thread, "index": index, "pad": "x" * 100})

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    log.close()
    lines = lines_of(log.path)
    assert len(lines) == 1600
    assert sorted(line["seq"] for line in lines) == list(range(1600))
    # The lock covers numbering and writing together, so the file is in seq order.
    assert [line["seq"] for line in lines] == list(range(1600))


def _append_from_another_process(directory: str, session_id: str, writer: int, start: Any) -> None:
    start.wait()
    with SessionLog(Path(directory), session_id) as log:
        for index in range(300):
            log.append("hook/invoked", {"writer": writer, "index": index, "pad": str(writer) * 2000})


def test_two_processes_appending_to_one_file_write_whole_lines_only(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    processes = [
        context.Process(target=_append_from_another_process, args=(str(tmp_path), "shared", writer, start))
        for writer in (1, 2)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    lines = lines_of(tmp_path / "shared.jsonl")
    assert len(lines) == 600
    for writer in (1, 2):
        mine = [line["data"] for line in lines if line["data"]["writer"] == writer]
        assert [data["index"] for data in mine] == list(range(300))
        assert all(data["pad"] == str(writer) * 2000 for data in mine)


# --- Reading ------------------------------------------------------------------------------------


def test_reading_a_session_returns_its_events_in_order(tmp_path: Path) -> None:
    write_events(tmp_path / "s.jsonl", 3)
    read = read_session(tmp_path / "s.jsonl")
    assert read.warnings == []
    assert [(event.seq, event.type, event.data["call_id"]) for event in read.events] == [
        (0, "tool/call", "c0"),
        (1, "tool/call", "c1"),
        (2, "tool/call", "c2"),
    ]
    assert isinstance(read.events[0], LoggedEvent) and TIME_FORMAT.match(read.events[0].time)


def test_an_empty_session_file_has_no_events(tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_bytes(b"")
    assert read_session(tmp_path / "s.jsonl").events == []


@pytest.mark.parametrize(
    "tail", [b'{"seq":2,"time":"2026-', b'{"seq":2,"ti\n', b'{"seq":2,"time":"x","type":"a","data":{}}']
)
def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "s.jsonl"
    write_events(path, 2)
    with path.open("ab") as handle:
        handle.write(tail)
    read = read_session(path)
    assert [event.seq for event in read.events] == [0, 1]
    assert read.warnings == [
        f"{path}: line 3 is incomplete (the session was probably interrupted while writing); ignored"
    ]


def test_a_corrupt_line_before_the_last_raises_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_events(path, 1)
    with path.open("ab") as handle:
        handle.write(b"not json\n")
    write_events(path, 1)
    with pytest.raises(
        SessionLogError, match=rf"{re.escape(str(path))}: line 2 is not a session event: it is not valid JSON"
    ) as caught:
        read_session(path)
    assert isinstance(caught.value, HarnessError) and caught.value.code == "SESSION_LOG_CORRUPT"


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (b'{"seq":0,"time":"t","type":"x"}', 'it has no "data"'),
        (b'{"time":"t","data":{}}', 'it has no "seq", "type"'),
        (b'{"seq":"0","time":"t","type":"x","data":{}}', 'its "seq" is "0", expected an integer'),
        (b"[1, 2]", "it is a JSON list, not an object"),
    ],
)
def test_a_json_line_that_is_not_an_event_raises_even_when_last(tmp_path: Path, line: bytes, problem: str) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(line + b"\n")
    with pytest.raises(SessionLogError, match=re.escape(f"line 1 is not a session event: {problem}")):
        read_session(path)


def test_reading_a_missing_file_raises_a_session_log_error(tmp_path: Path) -> None:
    with pytest.raises(SessionLogError, match="cannot read session file"):
        read_session(tmp_path / "missing.jsonl")


# --- Finding sessions ---------------------------------------------------------------------------


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    for session_id in ("20261129T204512Z-aaaaaa", "20261129T204512Z-aabbbb", "20261130T080000Z-cccccc"):
        write_events(tmp_path / f"{session_id}.jsonl", 1)
    (tmp_path / "notes.txt").write_text("not a session")
    return tmp_path


def test_sessions_are_listed_oldest_first_and_a_missing_directory_has_none(sessions: Path) -> None:
    assert [path.name for path in list_sessions(sessions)] == [
        "20261129T204512Z-aaaaaa.jsonl",
        "20261129T204512Z-aabbbb.jsonl",
        "20261130T080000Z-cccccc.jsonl",
    ]
    assert list_sessions(sessions / "missing") == []


def test_no_session_named_means_the_newest(sessions: Path) -> None:
    assert find_session(sessions, None).name == "20261130T080000Z-cccccc.jsonl"


def test_an_empty_directory_has_no_newest_session(tmp_path: Path) -> None:
    with pytest.raises(SessionLogError, match=f"no sessions in {re.escape(str(tmp_path))}"):
        find_session(tmp_path, None)


def test_a_session_is_found_by_exact_id_or_unique_prefix(sessions: Path) -> None:
    assert find_session(sessions, "20261129T204512Z-aaaaaa").name == "20261129T204512Z-aaaaaa.jsonl"
    assert find_session(sessions, "20261129T204512Z-aab").name == "20261129T204512Z-aabbbb.jsonl"
    assert find_session(sessions, "20261130").name == "20261130T080000Z-cccccc.jsonl"


def test_an_ambiguous_prefix_raises_listing_the_candidates(sessions: Path) -> None:
    with pytest.raises(SessionLogError, match="ambiguous") as caught:
        find_session(sessions, "20261129")
    assert "20261129T204512Z-aaaaaa" in str(caught.value) and "20261129T204512Z-aabbbb" in str(caught.value)


def test_an_ambiguous_prefix_lists_at_most_ten_candidates(tmp_path: Path) -> None:
    for index in range(12):
        write_events(tmp_path / f"2026-{index:02d}.jsonl", 1)
    with pytest.raises(SessionLogError) as caught:
        find_session(tmp_path, "2026")
    assert str(caught.value).count("2026-") == 10 and "and 2 more" in str(caught.value)


def test_an_unknown_session_raises_listing_the_known_ones(sessions: Path) -> None:
    with pytest.raises(SessionLogError, match='no session "zzz"') as caught:
        find_session(sessions, "zzz")
    assert "20261130T080000Z-cccccc" in str(caught.value)
    assert caught.value.code == "SESSION_NOT_FOUND"


def test_a_path_to_a_session_file_is_found_as_is(sessions: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere" / "old.jsonl"
    write_events(elsewhere, 1)
    assert find_session(sessions, str(elsewhere)) == elsewhere
    assert find_session(sessions, "20261129T204512Z-aabbbb.jsonl") == sessions / "20261129T204512Z-aabbbb.jsonl"
    with pytest.raises(SessionLogError, match="no session file"):
        find_session(sessions, str(tmp_path / "missing.jsonl"))


# --- Cards --------------------------------------------------------------------------------------


def event(seq: int, kind: str, data: dict[str, Any], time_: str = "2026-11-29T20:45:12.345Z") -> LoggedEvent:
    return LoggedEvent(seq=seq, time=time_, type=kind, data=data)


def test_a_call_card_shows_seq_time_call_id_tool_and_arguments() -> None:
    card = render_card(event(3, "tool/call", {"call_id": "c1", "name": "echo", "arguments": {"text": "hi"}}))
    assert card == '[3] 20:45:12 ▶ call c1 echo {"text": "hi"}'


def test_a_result_card_shows_its_content_indented() -> None:
    image = ImageBlock(attachment_id="a1", media_type="image/png", size_bytes=10, width=640, height=480).to_json()
    content = [{"type": "text", "text": "line one\nline two"}, image, {"type": "reasoning", "text": "hmm"}]
    card = render_card(
        event(4, "tool/result", {"call_id": "c1", "name": "echo", "is_error": False, "content": content})
    )
    assert card.splitlines() == [
        "[4] 20:45:12 ✔ result c1 echo",
        "    line one",
        "    line two",
        "    [image image/png 640x480]",
        "    [reasoning content]",
    ]


def test_a_failed_result_card_shows_its_code_when_it_has_one() -> None:
    coded = {
        "call_id": "c2",
        "name": "nope",
        "is_error": True,
        "error": {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"},
    }
    card = render_card(
        event(5, "tool/result", {**coded, "content": [{"type": "text", "text": 'Error: unknown tool "nope"'}]})
    )
    assert card.splitlines() == ["[5] 20:45:12 ✖ result c2 nope [UNKNOWN_TOOL]", '    Error: unknown tool "nope"']
    denied = render_card(
        event(6, "tool/result", {"call_id": "c3", "name": "echo", "is_error": True, "error": None, "content": []})
    )
    assert denied == "[6] 20:45:12 ✖ result c3 echo"


def test_code_mode_sub_call_cards_show_the_sub_call_id_tool_and_outcome() -> None:
    start = {"root_call_id": "c1", "parent_call_id": "c1", "sub_call_id": "c1:code:1", "name": "read"}
    card = render_card(event(7, "tool/code-dispatch-start", {**start, "arguments": {"file_path": "a"}}))
    assert card == '[7] 20:45:12   ▷ sub-call c1:code:1 read {"file_path": "a"}'
    settled = {**start, "arguments": {}, "is_error": True, "content": [{"type": "text", "text": "Error: no"}]}
    assert render_card(event(8, "tool/code-dispatch", settled)).splitlines() == [
        "[8] 20:45:12   ✖ sub-call c1:code:1 read",
        "      Error: no",
    ]
    ok = render_card(event(9, "tool/code-dispatch", {**start, "is_error": False, "content": []}))
    assert ok == "[9] 20:45:12   ✔ sub-call c1:code:1 read"


def test_long_text_in_a_card_is_truncated_with_the_count_left_out() -> None:
    content = [{"type": "text", "text": "a" * 2500}]
    card = render_card(
        event(1, "tool/result", {"call_id": "c1", "name": "echo", "is_error": False, "content": content})
    )
    assert card.splitlines()[1] == "    " + "a" * 2000 + "… (500 more characters)"


def test_approval_cards_show_the_tool_and_the_outcome() -> None:
    asked = render_card(
        event(7, "approval/asked", {"id": "ab12", "tool_name": "bash", "call_id": "c1", "reason": "rm"})
    )
    assert asked == "[7] 20:45:12 ? approval asked ab12 bash call c1: rm"
    decided = render_card(event(8, "approval/decided", {"id": "ab12", "outcome": "allowed-once"}))
    assert decided == "[8] 20:45:12 ⚑ approval decided ab12 allowed-once"
    unanswered = render_card(event(9, "approval/decided", {"id": "ab12", "outcome": None}))
    assert unanswered.endswith("ab12 no answer")


def test_other_events_are_one_line_of_type_and_compact_json() -> None:
    card = render_card(event(9, "hook/invoked", {"hook": "PreToolUse", "n": 1}, time_="2026-11-29T23:59:59.999+00:00"))
    assert card == '[9] 23:59:59 • hook/invoked {"hook":"PreToolUse","n":1}'


def test_cards_have_no_ansi_escapes() -> None:
    card = render_card(event(1, "tool/call", {"call_id": "c1", "name": "echo", "arguments": {}}))
    assert "\x1b" not in card


# --- Following ----------------------------------------------------------------------------------


def test_following_yields_existing_events_then_appended_ones(tmp_path: Path) -> None:
    log = SessionLog(tmp_path, "s")
    log.append("hook/invoked", {"index": 0})
    seen: list[LoggedEvent] = []

    def write_more() -> None:
        for index in range(1, 5):
            time.sleep(0.01)
            log.append("hook/invoked", {"index": index})

    writer = threading.Thread(target=write_more)
    writer.start()
    deadline = time.monotonic() + 10
    for followed in follow_session(
        log.path, poll_interval=0.005, stop=lambda: len(seen) >= 5 or time.monotonic() > deadline
    ):
        seen.append(followed)
    writer.join()
    log.close()
    assert [followed.data["index"] for followed in seen] == [0, 1, 2, 3, 4]


def test_following_yields_a_line_only_once_it_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    line = b'{"seq":0,"time":"2026-11-29T20:45:12.000Z","type":"hook/invoked","data":{"n":1}}\n'
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.write(fd, line[:30])
    seen: list[LoggedEvent] = []
    polls = 0

    def stop() -> bool:
        nonlocal polls
        polls += 1
        if polls == 3:
            assert seen == []  # the half line was not yielded
            os.write(fd, line[30:])
        return len(seen) == 1 or polls > 1000

    try:
        seen.extend(follow_session(path, poll_interval=0.001, stop=stop))
    finally:
        os.close(fd)
    assert [(followed.seq, followed.data) for followed in seen] == [(0, {"n": 1})]


def test_following_waits_for_the_file_to_appear(tmp_path: Path) -> None:
    log = SessionLog(tmp_path, "later")
    timer = threading.Timer(0.02, lambda: log.append("hook/invoked", {}))
    timer.start()
    deadline = time.monotonic() + 10
    seen = next(iter(follow_session(log.path, poll_interval=0.005, stop=lambda: time.monotonic() > deadline)))
    timer.join()
    log.close()
    assert seen.type == "hook/invoked"


# --- With the pipeline --------------------------------------------------------------------------


def test_a_harness_logging_to_a_session_file_writes_call_and_result_without_the_value(tmp_path: Path) -> None:
    async def execute(args: Any, ctx: Any) -> Any:
        return args["text"] + "-the-canonical-value"

    echo = ToolDefinition(
        name="echo",
        description="Echo text",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        output=ToolOutput(schema={"type": "string"}, render=lambda args, value: [TextBlock(text="shown to the model")]),
        execute=execute,
    )
    log = SessionLog(tmp_path)
    harness = Harness(events=log)
    harness.tools.register(echo)

    async def run() -> Any:
        return await harness.execute(ToolCall(call_id="c1", name="echo", arguments={"text": "hi"}))

    result = anyio.run(run)
    log.close()
    assert result.value == "hi-the-canonical-value"
    read = read_session(log.path)
    assert [logged.type for logged in read.events] == ["tool/call", "tool/result"]
    assert read.events[0].data == {"call_id": "c1", "name": "echo", "arguments": {"text": "hi"}}
    assert read.events[1].data["content"] == [{"type": "text", "text": "shown to the model"}]
    assert "the-canonical-value" not in log.path.read_text(encoding="utf-8")
    assert render_card(read.events[1]).splitlines()[1] == "    shown to the model"
