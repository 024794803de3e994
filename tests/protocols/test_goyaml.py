"""yaml.v3 quoting and map decoding: the golden styles, read-back of every encoding, and the fast paths' equivalence."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmgauge.protocols import goyaml
from swarmgauge.protocols.goyaml import YamlMapError, decode_map, encode_map, yaml_scalar


@pytest.mark.parametrize(
    "value, written",
    [
        ("0", '"0"'),
        ("0.7", '"0.7"'),
        ("true", '"true"'),
        ("yes", '"yes"'),
        ("off", '"off"'),
        ("null", '"null"'),
        ("2026-01-01T00:00:00Z", '"2026-01-01T00:00:00Z"'),
        ("1e3", '"1e3"'),
        ("0x1F", '"0x1F"'),
        ("12:30", '"12:30"'),
        ("alpha,wire", "alpha,wire"),
        ("Note", "Note"),
        ("Beta | piped", "Beta | piped"),
        ("*", "'*'"),
        ("&anchor", "'&anchor'"),
        ("- item", "'- item'"),
        ("a: b", "'a: b'"),
        ("a #b", "'a #b'"),
        (" lead", "' lead'"),
        ("trail ", "'trail '"),
        ("", '""'),
        ("two\nlines", '"two\\nlines"'),
        ("tab\there", '"tab\\there"'),
        ("sha256-0500", "sha256-0500"),
        ("it's", "it's"),
    ],
)
def test_scalar_styles(value, written):
    assert yaml_scalar(value) == written


def test_keys_are_sorted():
    assert encode_map({"version": "3", "etag": "ab", "status": "ok"}) == 'etag: ab\nstatus: ok\nversion: "3"\n'


@pytest.mark.parametrize(
    "block", ["- a\n- b\n", "a:\n  b: c\n", "a: [1, 2]\n", "a: b\na: c\n", "a: {b: c}\n", "a: *x\n", "{unclosed\n"]
)
def test_not_a_flat_map_of_strings(block):
    with pytest.raises(YamlMapError):
        decode_map(block)


def test_nulls_and_empty_read_as_empty_strings():
    assert decode_map("a: ~\nb:\nc: null\n") == {"a": "", "b": "", "c": ""}


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
keys = st.from_regex(r"[a-z0-9][a-z0-9-]{0,15}", fullmatch=True)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(keys, text, max_size=8))
def test_every_encoding_reads_back_to_the_same_map(metadata):
    assert decode_map(encode_map(metadata)) == metadata


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(keys, text, max_size=8))
def test_simple_reader_agrees_with_yaml_whenever_it_answers(metadata):
    block = encode_map(metadata)
    simple = goyaml._decode_simple(block)
    if simple is not None:
        assert simple == goyaml._decode_yaml(block)


@settings(max_examples=400, deadline=None)
@given(st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ,._/+=()-]{0,30}", fullmatch=True))
def test_safe_plain_shortcut_agrees_with_the_full_analysis(value):
    if not value.endswith(" "):
        assert goyaml._analyze_chars(value) == (True, True)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_decode_raises_only_the_named_error(block):
    try:
        result = decode_map(block)
    except YamlMapError:
        return
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in result.items())
