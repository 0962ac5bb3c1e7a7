"""`.properties` parsing and writing.

Every expected value in JAVA_VECTORS was produced by `java.util.Properties.load(Reader)`
on OpenJDK 17; the tests at the end re-check them, fuzz the parser and compare
`dump_properties` with `Properties.store` whenever a JDK is installed.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cdc.api.errors import ConfigException
from cdc.config import ConfigFileError, dump_properties, parse_properties

JAVA_VECTORS: list[tuple[str, dict[str, str]]] = [
    # separators and whitespace
    ("a=b", {"a": "b"}),
    ("a:b", {"a": "b"}),
    ("a b", {"a": "b"}),
    ("a\tb", {"a": "b"}),
    ("a\fb", {"a": "b"}),
    ("  a  =  b  ", {"a": "b  "}),  # trailing whitespace of a value is kept
    ("a = = b", {"a": "= b"}),  # only the first separator counts
    ("a : b : c", {"a": "b : c"}),
    ("a  :=b", {"a": "=b"}),
    ("a= :b", {"a": ":b"}),
    ("  \t\f k=v", {"k": "v"}),
    # a key without a value
    ("key", {"key": ""}),
    ("key   ", {"key": ""}),
    ("key=", {"key": ""}),
    ("key:", {"key": ""}),
    # escaped separators and comment characters in keys
    ("\\ key\\ = value", {" key ": "value"}),
    ("a\\=b=c", {"a=b": "c"}),
    ("a\\:b:c", {"a:b": "c"}),
    ("a\\#b=c", {"a#b": "c"}),
    ("\\#notcomment=1", {"#notcomment": "1"}),
    # comments
    ("#comment\n!also\n  # indented\nk=v", {"k": "v"}),
    ("k=v # not a comment", {"k": "v # not a comment"}),
    # continuation lines
    ("a=b\\\n   c", {"a": "bc"}),  # leading whitespace of the continued line dropped
    ("a=b\\\\\nc=d", {"a": "b\\", "c": "d"}),  # even number of backslashes: no continuation
    ("a=b\\\\\\\n  c", {"a": "b\\c"}),  # odd number: continuation
    ("a=b\\\n# not a comment", {"a": "b# not a comment"}),  # a continued line is never a comment
    ("a=b\\\n\nc=d", {"a": "b", "c": "d"}),  # a blank line ends the continuation
    ("a=b\\", {"a": "b"}),  # backslash before EOF is dropped
    ("ke\\\n  y=v", {"key": "v"}),  # a key can be continued too
    ("a=b\\\r\n  c\r\nd=e", {"a": "bc", "d": "e"}),
    ("a=b\\\r  c\rd=e", {"a": "bc", "d": "e"}),  # lone \r is a line end
    ("\\\n#c\nk=v", {"k": "v"}),  # after a lone "\" line, a "#" line is still a comment
    # escapes
    ("a=\\t\\n\\r\\f\\\\", {"a": "\t\n\r\f\\"}),
    ('a=\\b\\q\\z\\"', {"a": 'bqz"'}),  # unknown escape: the character itself
    ("a=\\u0041\\u00e9", {"a": "A\u00e9"}),
    ("a=\\ud83d\\ude00", {"a": "\U0001f600"}),  # a surrogate pair is one character
    ("a=\\ud83d", {"a": "\ud83d"}),  # a lone surrogate is kept, as in Java
    ("\\u0041=\\u0042", {"A": "B"}),
    # duplicates and odd characters
    ("a=1\na=2", {"a": "2"}),
    ("a=trailing   ", {"a": "trailing   "}),
    ("a=\\  leading", {"a": "  leading"}),
    ("k=\u00e9\U0001f600", {"k": "\u00e9\U0001f600"}),
    ("k=a\u2028b", {"k": "a\u2028b"}),  # not a line break for Java (nor for us)
    ("k=a\x0bb", {"k": "a\x0bb"}),  # \v is not whitespace in .properties
    ("k=a\x85b", {"k": "a\x85b"}),
]


@pytest.mark.parametrize(("text", "expected"), JAVA_VECTORS)
def test_matches_java(text: str, expected: dict[str, str]) -> None:
    assert parse_properties(text) == expected


def test_kafka_worker_file() -> None:
    text = (
        "# Kafka Connect standalone worker\n"
        "bootstrap.servers=localhost:9092\n"
        "key.converter=org.apache.kafka.connect.json.JsonConverter\n"
        "key.converter.schemas.enable=true\n"
        "offset.storage.file.filename=/tmp/connect.offsets\n"
        "plugin.path=/usr/share/java,\\\n"
        "            /opt/connectors\n"
    )
    assert parse_properties(text) == {
        "bootstrap.servers": "localhost:9092",
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "true",
        "offset.storage.file.filename": "/tmp/connect.offsets",
        "plugin.path": "/usr/share/java,/opt/connectors",
    }


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a=1\nb=\\u12\n", 2),
        ("a=1\n\nx=\\u12G4", 3),
        ("a=b\\\n  c\\u1", 2),  # reported on the natural line holding the escape
        ("a=ok\r\n\r\nb=\\u", 3),
    ],
)
def test_malformed_unicode_escape_in_value(text: str, line: int) -> None:
    with pytest.raises(ConfigFileError) as info:
        parse_properties(text, "worker.properties")
    e = info.value
    assert isinstance(e, ConfigException)
    assert e.line_number == line
    assert str(e).startswith(f"worker.properties:{line}: malformed \\uXXXX escape")
    assert "\n" not in str(e)
    assert "literal backslash is written \\\\" in str(e)


def test_malformed_escape_in_value_quotes_only_the_escape() -> None:
    with pytest.raises(ConfigFileError) as info:
        parse_properties("database.password=s3cr3t\\u12zz-more-secret", "conn.properties")
    message = str(info.value)
    assert message == (
        'conn.properties:1: malformed \\uXXXX escape "\\u12zz" in the value of "database.password"; '
        "a \\u needs 4 hex digits, and a literal backslash is written \\\\"
    )
    assert "s3cr3t" not in message
    assert info.value.name == "database.password"


def test_malformed_escape_in_key_names_the_key() -> None:
    with pytest.raises(ConfigFileError) as info:
        parse_properties("ok=1\n\n\n\n\n\na\\u12=x\n", "worker.properties")
    assert str(info.value) == (
        'worker.properties:7: malformed \\uXXXX escape in key "a\\u12"; '
        "a \\u needs 4 hex digits, and a literal backslash is written \\\\"
    )


@pytest.mark.parametrize("text", ["=value", "  : value", "a=1\n= x", " =", ":"])
def test_empty_key_is_an_error(text: str) -> None:
    # Java would store "" -> value; nobody means that, so we refuse the line.
    with pytest.raises(ConfigFileError) as info:
        parse_properties(text, "c.properties")
    assert "no key" in str(info.value)
    assert "\\=" in str(info.value)


def test_lone_backslash_line_at_end_is_ignored() -> None:
    # Java stores ""="" for this (an artifact of its line reader); we store nothing.
    assert parse_properties("a=1\n\\\n") == {"a": "1"}


def test_empty_and_comment_only_text() -> None:
    assert parse_properties("") == {}
    assert parse_properties("\n\n   \n# just a comment\n! another") == {}


# -- writing ------------------------------------------------------------------------------
def test_dump_escapes_like_java_store() -> None:
    # Expected lines are what Properties.store(OutputStream) writes (minus its date comment).
    props = {
        "plain.key": "value",
        "key with space": " leading and inner space",
        "sep=:#!": "v=:#!",
        "tab\tnl\n": "cr\rff\f\\",
        "unicode": "\u00e9\U0001f600\x01",
    }
    assert dump_properties(props) == (
        "plain.key=value\n"
        "key\\ with\\ space=\\ leading and inner space\n"
        "sep\\=\\:\\#\\!=v\\=\\:\\#\\!\n"
        "tab\\tnl\\n=cr\\rff\\f\\\\\n"
        "unicode=\\u00E9\\uD83D\\uDE00\\u0001\n"
    )


def test_dump_non_ascii_kept_when_asked() -> None:
    assert dump_properties({"k": "\u00e9"}, ascii_only=False) == "k=\u00e9\n"


def test_dump_comments() -> None:
    text = dump_properties({"a": "b"}, comments="generated by cdc\nsecond line")
    assert text == "#generated by cdc\n#second line\na=b\n"
    assert parse_properties(text) == {"a": "b"}


def test_dump_refuses_empty_key() -> None:
    with pytest.raises(ConfigException):
        dump_properties({"": "x"})


_keys = st.text(min_size=1)
_dicts = st.dictionaries(_keys, st.text())


@given(_dicts)
def test_round_trip(props: dict[str, str]) -> None:
    assert parse_properties(dump_properties(props)) == props


@given(_dicts)
def test_round_trip_without_unicode_escapes(props: dict[str, str]) -> None:
    assert parse_properties(dump_properties(props, ascii_only=False)) == props


@given(_dicts)
def test_dump_is_ascii(props: dict[str, str]) -> None:
    assert dump_properties(props).isascii()


@given(st.text())
def test_parse_never_crashes(text: str) -> None:
    # Any text either parses or raises our one-line ConfigFileError, never something else.
    try:
        parse_properties(text, "fuzz.properties")
    except ConfigFileError as e:
        assert "\n" not in str(e)


# -- against the real java.util.Properties -------------------------------------------------
# The python-svc machine image ships OpenJDK 17, so these run in CI; where no JDK is
# installed they are skipped (the vectors above still pin Java's answers). One JVM handles
# the whole corpus, so they cost about two seconds.

needs_jdk = pytest.mark.skipif(
    shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK (javac and java)"
)

# Reads each named file as UTF-8 and prints one JSON line per file: {"ok": {...}} after
# Properties.load(Reader), or {"error": ...}. With "--store", reads NUL-separated
# key/value pairs from one file and prints Properties.store(OutputStream) output.
HARNESS = r"""
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.*;
import java.util.*;

public class PropsHarness {
    static String q(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }
    static String read(String f) throws IOException {
        return new String(Files.readAllBytes(Paths.get(f)), StandardCharsets.UTF_8);
    }
    public static void main(String[] args) throws Exception {
        if (args[0].equals("--store")) {
            String[] parts = read(args[1]).split("\0", -1);
            Properties p = new Properties();
            for (int i = 0; i + 1 < parts.length; i += 2) p.setProperty(parts[i], parts[i + 1]);
            p.store(System.out, null);
            System.out.flush();
            return;
        }
        for (String f : args) {
            Properties p = new Properties();
            try {
                p.load(new StringReader(read(f)));
                StringBuilder b = new StringBuilder("{\"ok\": {");
                String sep = "";
                for (String k : p.stringPropertyNames()) {
                    b.append(sep).append(q(k)).append(": ").append(q(p.getProperty(k)));
                    sep = ", ";
                }
                System.out.println(b.append("}}"));
            } catch (IllegalArgumentException e) {
                System.out.println("{\"error\": " + q(String.valueOf(e.getMessage())) + "}");
            }
        }
    }
}
"""

# Fragments chosen to collide: separators, comment marks, backslashes before line ends,
# partial \u escapes, surrogates and characters that are line breaks elsewhere but not here.
FRAGMENTS = [
    "key", "a", " ", "\t", "\f", "=", ":", "#", "!", "\\", "\\\\", "\\u", "\n", "\r", "\r\n",
    "00e9", "d83d", "\\ude00", "1", "F", "\u00e9", "\U0001f600", "\x0b", "\u2028", "\x85",
    "\\t", "\\n", " \\\n  ",
]  # fmt: skip


@pytest.fixture(scope="module")
def java(tmp_path_factory: pytest.TempPathFactory) -> Path:
    classes = tmp_path_factory.mktemp("java")
    (classes / "PropsHarness.java").write_text(HARNESS, encoding="utf-8")
    subprocess.run(["javac", "-d", str(classes), str(classes / "PropsHarness.java")], check=True)
    return classes


def java_load(classes: Path, workdir: Path, texts: list[str]) -> list[dict[str, object]]:
    files = []
    for i, text in enumerate(texts):
        path = workdir / f"{i}.properties"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        files.append(str(path))
    out = subprocess.run(
        ["java", "-cp", str(classes), "PropsHarness", *files], capture_output=True, text=True, check=True
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def agrees(text: str, java_result: dict[str, object]) -> bool:
    try:
        ours = parse_properties(text)
    except ConfigFileError as e:
        if "error" in java_result:
            return True
        # Our one deliberate difference: Java stores an empty key, we refuse the line.
        java_props = java_result["ok"]
        return isinstance(java_props, dict) and "" in java_props and "no key" in str(e)
    if "error" in java_result:
        return False
    java_props = dict(java_result["ok"])  # type: ignore[call-overload]
    if java_props.get("") == "" and "" not in ours:
        del java_props[""]  # a lone "\" before EOF: Java's artifact, which we skip
    return ours == java_props


@needs_jdk
def test_vectors_match_java(java: Path, tmp_path: Path) -> None:
    texts = [text for text, _ in JAVA_VECTORS]
    for (text, expected), result in zip(JAVA_VECTORS, java_load(java, tmp_path, texts), strict=True):
        assert result == {"ok": expected}, text


@needs_jdk
def test_random_text_matches_java(java: Path, tmp_path: Path) -> None:
    rng = random.Random(20240611)
    texts = ["".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    mismatches = [t for t, r in zip(texts, java_load(java, tmp_path, texts), strict=True) if not agrees(t, r)]
    assert mismatches == []


@needs_jdk
def test_dump_matches_java_store(java: Path, tmp_path: Path) -> None:
    rng = random.Random(7)
    alphabet = "ab =:#!\\\t\n\r\f\x01\x7f\u00e9\U0001f600\u2028x"
    for _ in range(8):  # one JVM each
        props = {
            "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))): "".join(
                rng.choice(alphabet) for _ in range(rng.randint(0, 6))
            )
            for _ in range(rng.randint(1, 4))
        }
        pairs = tmp_path / "pairs"
        pairs.write_text("".join(f"{k}\0{v}\0" for k, v in props.items()), encoding="utf-8")
        stored = subprocess.run(
            ["java", "-cp", str(java), "PropsHarness", "--store", str(pairs)], capture_output=True, check=True
        ).stdout.decode("iso-8859-1")
        java_lines = sorted(line for line in stored.splitlines() if not line.startswith("#"))
        assert sorted(dump_properties(props).splitlines()) == java_lines
        assert parse_properties(stored) == props
