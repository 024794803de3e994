"""The small part of gopkg.in/yaml.v3 the Mark Protocol uses: a flat map of strings, written and read byte-faithfully.

The real server and client marshal ``map[string]string`` with yaml.v3, so a value that would read back as a number,
bool, null or timestamp is double-quoted, a value that plain style cannot carry is single-quoted, and everything else
is bare. Matching those choices exactly is what makes our responses equal the Go goldens byte for byte.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Mapping
from typing import cast

import yaml
import yaml.nodes

_RESOLVE_MAP_NON_STR = frozenset(
    [
        "true",
        "True",
        "TRUE",
        "false",
        "False",
        "FALSE",
        "",
        "~",
        "null",
        "Null",
        "NULL",
        ".nan",
        ".NaN",
        ".NAN",
        ".inf",
        ".Inf",
        ".INF",
        "+.inf",
        "+.Inf",
        "+.INF",
        "-.inf",
        "-.Inf",
        "-.INF",
        "<<",
    ]
)
_NULLS = frozenset(["", "~", "null", "Null", "NULL"])
# yaml.v3 still quotes YAML 1.1 booleans so older parsers read them back as strings.
_OLD_BOOLS = frozenset(
    ["y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF"]
)
_HINT = {c: "D" for c in "0123456789"} | {"+": "S", "-": "S", ".": "."} | {c: "M" for c in "yYnNtTfFoO~"}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_DOT_FLOAT = re.compile(r"\.[0-9]+([eE][-+]?[0-9]+)?\Z")
_BASE60 = re.compile(r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")
_TIMESTAMP = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2})"
    r"(?:(?:[Tt](\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(?:Z|[+-]\d{2}:\d{2}))"
    r"|(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?))?\Z"
)
_INT_BODY = {
    16: re.compile(r"[0-9a-fA-F]+\Z"),
    8: re.compile(r"[0-7]+\Z"),
    2: re.compile(r"[01]+\Z"),
    10: re.compile(r"[0-9]+\Z"),
}


def _go_parse_int(text: str, *, signed: bool) -> bool:
    """Whether Go's ``strconv.ParseInt(text, 0, 64)`` (or ParseUint when not signed) accepts ``text``."""
    negative = False
    if text[:1] in ("+", "-"):
        if not signed:
            return False
        negative, text = text[0] == "-", text[1:]
    base, digits = 10, text
    lower = text[:2].lower()
    if lower == "0x":
        base, digits = 16, text[2:]
    elif lower == "0o":
        base, digits = 8, text[2:]
    elif lower == "0b":
        base, digits = 2, text[2:]
    elif text[:1] == "0" and len(text) > 1:
        base, digits = 8, text[1:]
    if not digits or not _INT_BODY[base].match(digits):
        return False
    value = int(digits, base)
    if not signed:
        return value < 1 << 64
    return value <= (1 << 63) if negative else value < (1 << 63)


def _go_float_ok(text: str) -> bool:
    try:
        return not math.isinf(float(text))
    except ValueError:
        return False


def _is_timestamp(text: str) -> bool:
    match = _TIMESTAMP.match(text)
    if not match:
        return False
    year, month, day = (int(g) for g in match.group(1, 2, 3))
    if not 1 <= month <= 12 or not 1 <= day <= calendar.monthrange(year or 2000, month)[1]:
        return False
    clock = match.group(4, 5, 6) if match.group(4) else match.group(7, 8, 9)
    if clock[0] is None:
        return True
    hour, minute, second = (int(g) for g in clock)
    return hour < 24 and minute < 60 and second < 60


def resolves_to_string(value: str) -> bool:
    """yaml.v3's ``resolve("", value)`` gives ``!!str`` (the value would read back as itself if written bare)."""
    hint = _HINT.get(value[:1], "N" if not value else "")
    if not hint:
        return True
    if value in _RESOLVE_MAP_NON_STR:
        return False
    if hint == ".":
        return not (_DOT_FLOAT.match(value) and _go_float_ok(value))
    if hint in ("D", "S"):
        if _is_timestamp(value):
            return False
        plain = value.replace("_", "")
        if _go_parse_int(plain, signed=True) or _go_parse_int(plain, signed=False):
            return False
        if _YAML_STYLE_FLOAT.match(plain) and _go_float_ok(plain):
            return False
        for prefix, base in (("0b", 2), ("-0b", 2), ("0o", 8), ("-0o", 8)):
            if plain.startswith(prefix) and _INT_BODY[base].match(plain[len(prefix) :]):
                return False
    return True


def _printable(cp: int) -> bool:
    return cp == 0x0A or 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xD7FF or (0xE000 <= cp <= 0xFFFD and cp != 0xFEFF)


def _is_break(ch: str) -> bool:
    return ch in "\r\n\x85\u2028\u2029"


# Values made only of these characters, starting with a letter or digit and not ending in a space, raise none of
# the flags below (no indicator, break, tab, special character, ": " or " #"): hex etags, tags, titles, paths.
_SAFE_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ,._/+=()-]*")


def _analyze(value: str) -> tuple[bool, bool]:
    """(block plain allowed, single quoted allowed), as libyaml's ``analyze_scalar`` decides for a block map value."""
    if value and value[-1] != " " and _SAFE_PLAIN.fullmatch(value):
        return True, True
    return _analyze_chars(value)


def _analyze_chars(value: str) -> tuple[bool, bool]:
    """The character-by-character analysis behind :func:`_analyze`."""
    block_indicators = value[:3] in ("---", "...")
    special = tabs = False
    leading_space = leading_break = trailing_space = trailing_break = False
    break_space = space_break = line_breaks = False
    previous_space = previous_break = False
    preceded_by_ws = True
    last = len(value) - 1
    for i, ch in enumerate(value):
        followed_by_ws = i == last or value[i + 1] in " \t"
        if i == 0:
            if ch in "#,[]{}&*!|>'\"%@`" or (ch in "?:" and followed_by_ws) or (ch == "-" and followed_by_ws):
                block_indicators = True
        elif (ch == ":" and followed_by_ws) or (ch == "#" and preceded_by_ws):
            block_indicators = True
        if ch == "\t":
            tabs = True
        elif not _printable(ord(ch)):
            special = True
        if ch == " ":
            leading_space |= i == 0
            trailing_space |= i == last
            break_space |= previous_break
            previous_space, previous_break = True, False
        elif _is_break(ch):
            line_breaks = True
            leading_break |= i == 0
            trailing_break |= i == last
            space_break |= previous_space
            previous_space, previous_break = False, True
        else:
            previous_space = previous_break = False
        preceded_by_ws = ch in " \t" or _is_break(ch)
    plain = not (
        leading_space
        or leading_break
        or trailing_space
        or trailing_break
        or break_space
        or space_break
        or tabs
        or special
        or line_breaks
        or block_indicators
    )
    single = not (break_space or space_break or tabs or special)
    return plain, single


_DQ_ESCAPES = {
    0x00: "0",
    0x07: "a",
    0x08: "b",
    0x09: "t",
    0x0A: "n",
    0x0B: "v",
    0x0C: "f",
    0x0D: "r",
    0x1B: "e",
    0x22: '"',
    0x5C: "\\",
    0x85: "N",
    0xA0: "_",
    0x2028: "L",
    0x2029: "P",
}


def _double_quoted(value: str) -> str:
    out = ['"']
    for ch in value:
        cp = ord(ch)
        if not _printable(cp) or cp == 0xFEFF or _is_break(ch) or ch in '"\\':
            if cp in _DQ_ESCAPES:
                out.append("\\" + _DQ_ESCAPES[cp])
            elif cp <= 0xFF:
                out.append(f"\\x{cp:02X}")
            elif cp <= 0xFFFF:
                out.append(f"\\u{cp:04X}")
            else:
                out.append(f"\\U{cp:08X}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def yaml_scalar(value: str, *, as_key: bool = False) -> str:
    """One string as yaml.v3 writes it inside a block map (no line folding: yaml.v3's width is unlimited)."""
    plain_ok = resolves_to_string(value) and not (_BASE60.match(value) or value in _OLD_BOOLS)
    if "\n" in value or not plain_ok:
        # yaml.v3 picks a literal block for multi-line values; we always double-quote them (same strings on read).
        return _double_quoted(value)
    block_plain, single_ok = _analyze(value)
    if value == "" and as_key:
        block_plain = False
    if block_plain:
        return value
    if single_ok:
        return "'" + value.replace("'", "''") + "'"
    return _double_quoted(value)


def encode_map(metadata: Mapping[str, str]) -> str:
    """The lines of a sorted block map, as ``yaml.Marshal(map[string]string)`` writes them."""
    return "".join(f"{yaml_scalar(k, as_key=True)}: {yaml_scalar(v)}\n" for k, v in sorted(metadata.items()))


class YamlMapError(ValueError):
    """The block is not a flat YAML map of strings."""


# One ``key: value`` line whose meaning YAML leaves no room to doubt: a bare key, then a plain scalar that starts
# with no indicator and holds no ``:``/``#``/quote, or a double-quoted one without escapes.
_SIMPLE_LINE = re.compile(r'([a-z0-9][a-z0-9-]*): (?:([^\s"\'#&*!|>%@`{}\[\],?:\-][^:#"\'\n]*(?<=\S))|"([^"\\\n]*)")')


def _decode_simple(text: str) -> dict[str, str] | None:
    """The common block (every line simple, keys unique) without the YAML parser; None sends it the slow way.

    Responses are parsed once per request, and PyYAML's pure-Python composer costs milliseconds per block.
    """
    result: dict[str, str] = {}
    for line in text.split("\n"):
        if not line:
            continue
        match = _SIMPLE_LINE.fullmatch(line)
        if match is None:
            return None
        key, plain, quoted = match.groups()
        if key in result or (plain is not None and plain in _NULLS):
            return None
        result[key] = plain if plain is not None else quoted
    return result


def decode_map(text: str) -> dict[str, str]:
    """Decode a block as yaml.v3 would into ``map[string]string``: scalars only, no duplicate keys, nulls as ""."""
    simple = _decode_simple(text)
    return simple if simple is not None else _decode_yaml(text)


def _decode_yaml(text: str) -> dict[str, str]:
    """:func:`decode_map` through PyYAML's composer, for every block the simple reader declines."""
    try:
        node = yaml.compose(text, Loader=yaml.BaseLoader)
    except yaml.YAMLError as exc:
        raise YamlMapError(str(exc).splitlines()[0] if str(exc) else "invalid YAML") from None
    except (ValueError, RecursionError) as exc:
        raise YamlMapError(f"invalid YAML: {exc.__class__.__name__}") from None
    if node is None:
        return {}
    if not isinstance(node, yaml.nodes.MappingNode):
        raise YamlMapError("metadata is not a map")
    result: dict[str, str] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, yaml.nodes.ScalarNode) or not isinstance(value_node, yaml.nodes.ScalarNode):
            raise YamlMapError("metadata values must be strings")
        key = _scalar_text(key_node)
        if key in result:
            raise YamlMapError(f"duplicate key {key!r}")
        result[key] = _scalar_text(value_node)
    return result


def _scalar_text(node: yaml.nodes.ScalarNode) -> str:
    if node.style is None and node.tag in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:null") and node.value in _NULLS:
        return ""
    return cast(str, node.value)  # a ScalarNode's value is always its str source text
