import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.transforms._java_regex import compile_java_regex, parse_java_replacement, translate_pattern


@pytest.mark.parametrize(
    ("java", "python"),
    [
        ("(?<name>a)", "(?P<name>a)"),
        ("(?<=a)b(?<!c)", "(?<=a)b(?<!c)"),  # lookbehinds are not named groups
        (r"(?<x>a)\k<x>", "(?P<x>a)(?P=x)"),
        (r"\Qa.b*\E+", re.escape("a.b*") + "+"),
        (r"a\z", r"a\Z"),
        (r"[(?<x>]", r"[(?<x>]"),  # inside a character class nothing is rewritten
        (r"[]a]", r"[]a]"),
        (r"\(?<x>", r"\(?<x>"),  # escaped paren is no group
    ],
)
def test_translate_pattern(java: str, python: str) -> None:
    assert translate_pattern(java) == python


def test_named_group_and_backreference_behave_like_java() -> None:
    p = compile_java_regex(r"(?<w>\w+)-\k<w>")
    assert p.fullmatch("ab-ab") and not p.fullmatch("ab-cd")


@given(st.text(alphabet="ab$\\{}01x", max_size=12))
def test_replacement_parser_never_crashes_unexpectedly(replacement: str) -> None:
    pattern = re.compile("(a)(b)?")
    try:
        parsed = parse_java_replacement(replacement, pattern)
    except ValueError:
        return
    m = pattern.fullmatch("ab")
    assert m is not None
    assert isinstance(parsed.expand(m), str)


@given(st.text(alphabet=st.characters(blacklist_characters="$\\"), max_size=20))
def test_replacement_without_specials_is_literal(replacement: str) -> None:
    parsed = parse_java_replacement(replacement, re.compile("x"))
    m = re.fullmatch("x", "x")
    assert m is not None and parsed.expand(m) == replacement


@pytest.mark.parametrize(
    ("java", "matches", "rejects"),
    [
        (r"\p{Lower}+", "abc", "aBc"),
        (r"\p{Upper}\p{Digit}", "A1", "a1"),
        (r"\p{Alnum}+\p{Punct}", "db1.", "db1_x"),
        (r"\P{Digit}+", "ab.c", "a1"),
        (r"[\p{Alpha}_]+", "a_B", "a-1"),
        (r"\p{Punct}\p{Graph}\p{Print}", "!~ ", "a\tb"),
        (r"\p{Space}\p{Blank}\p{Cntrl}", "\n\t\x7f", "  a"),
        (r"\p{XDigit}{2}", "fF", "fg"),
    ],
)
def test_posix_character_classes(java: str, matches: str, rejects: str) -> None:
    # java.util.regex's POSIX classes (US-ASCII only by default); Python's re has no \p.
    p = compile_java_regex(java)
    assert p.fullmatch(matches) and not p.fullmatch(rejects)
