"""The feeder's reader and dealer: each format, each bad input as one UsageError naming the file and the line."""

from __future__ import annotations

import pytest

from swarmgauge.core.feeder_rows import RowDealer, check_columns, check_json_objects, read_rows
from swarmgauge.errors import UsageError


def _file(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_rows_keep_their_header_names_and_lines(tmp_path):
    path = _file(tmp_path, "rows.csv", 'path,note\n/a,"x, y"\n\n/b,z\n')
    rows = read_rows(path)
    assert rows.columns == ("path", "note")
    assert rows.rows == ({"path": "/a", "note": "x, y"}, {"path": "/b", "note": "z"})
    assert rows.lines == (2, 4) and rows.header_line == 1


def test_jsonl_rows_are_objects_with_the_union_of_their_keys(tmp_path):
    path = _file(tmp_path, "rows.jsonl", '{"input": "a", "n": 1}\n\n{"input": "b", "arguments": {"q": 2}}\n')
    rows = read_rows(path)
    assert rows.columns == ("input", "n", "arguments")
    assert rows.rows[1]["arguments"] == {"q": 2} and rows.lines == (1, 3)


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        ("rows.csv", "a,b\n1,2\n3,4,5\n", "rows.csv:3: 3 fields, the header has 2"),
        ("rows.csv", "a,,b\n1,2,3\n", "rows.csv:1: the header has an empty column name"),
        ("rows.csv", "a,a\n1,2\n", "rows.csv:1: the header repeats a"),
        ("rows.csv", "a,b\n", "rows.csv: no rows"),
        ("rows.jsonl", '{"a": 1}\n"text"\n', "rows.jsonl:2: not a JSON object (str)"),
        ("rows.jsonl", '{"a": 1}\n{"a": \n', "rows.jsonl:2: not JSON: Expecting value"),
        ("rows.ndjson", "\n\n", "rows.ndjson: no rows"),
        ("rows.txt", "a\n1\n", "unknown format '.txt'"),
    ],
)
def test_bad_files_are_one_usage_error_naming_the_file_and_line(tmp_path, name, text, says):
    path = _file(tmp_path, name, text)
    with pytest.raises(UsageError) as caught:
        read_rows(path)
    assert says in str(caught.value) and str(tmp_path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(UsageError, match=r"feeder file .*nope\.csv: no such file"):
        read_rows(tmp_path / "nope.csv")


def test_a_column_a_user_needs_is_named_with_the_header_line_or_the_row(tmp_path):
    csv_rows = read_rows(_file(tmp_path, "rows.csv", "\nid\n1\n"))
    with pytest.raises(UsageError, match=r"rows\.csv:2: no column 'path', which MarkUser takes \(has: id\)"):
        check_columns(csv_rows, ["path"], "MarkUser")
    jsonl_rows = read_rows(_file(tmp_path, "rows.jsonl", '{"input": "a"}\n{"other": 1}\n'))
    check_columns(read_rows(_file(tmp_path, "ok.jsonl", '{"input": "a"}\n')), ["input"], "KneoUser")
    with pytest.raises(UsageError, match=r"rows\.jsonl:2: no column 'input', which KneoUser takes"):
        check_columns(jsonl_rows, ["input"], "KneoUser")


def test_json_object_columns_accept_objects_and_their_text_only(tmp_path):
    good = read_rows(_file(tmp_path, "good.csv", 'arguments\n"{""path"": ""/a""}"\n'))
    check_json_objects(good, ["arguments"], "MCPToolUser")
    bad = read_rows(_file(tmp_path, "bad.csv", 'arguments\n"{""path"": 1}"\n[1]\n'))
    with pytest.raises(UsageError, match=r"bad\.csv:3: column 'arguments' is not a JSON object, which MCPToolUser"):
        check_json_objects(bad, ["arguments"], "MCPToolUser")
    broken = read_rows(_file(tmp_path, "broken.jsonl", '{"arguments": "{nope"}\n'))
    with pytest.raises(UsageError, match=r"broken\.jsonl:1: column 'arguments' is not JSON"):
        check_json_objects(broken, ["arguments"], "MCPToolUser")


def test_a_single_pass_deals_every_row_once_then_nothing():
    dealer = RowDealer(5, recycle=False)
    dealt = dealer.deal(2) + dealer.deal(2) + dealer.deal(2)
    assert dealt == [0, 1, 2, 3, 4] and dealer.exhausted
    assert dealer.deal(3) == [] and dealer.dealt == 5 and dealer.passes == 1


def test_recycling_starts_a_new_pass_only_after_every_row():
    dealer = RowDealer(3, recycle=True)
    assert dealer.deal(4) + dealer.deal(4) == [0, 1, 2, 0, 1, 2, 0, 1]
    assert not dealer.exhausted and dealer.passes == 3
