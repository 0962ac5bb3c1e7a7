"""The JAAS file of Kafka's BasicAuthSecurityRestExtension, read without a JVM.

Kafka Connect turns on REST basic auth with
`rest.extension.classes=org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension`
and a JAAS file named by the JVM system property `java.security.auth.login.config`, whose
`KafkaConnect` entry names `PropertyFileLoginModule` and its `file` of `user=password` lines:

    KafkaConnect {
        org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule required
        file="/etc/kafka/connect.password";
    };

Here the path comes from the worker key `java.security.auth.login.config`, or else from
`-Djava.security.auth.login.config=…` in `KAFKA_OPTS`, so Kafka's start scripts' environment
works unchanged. The parser follows `sun.security.provider.ConfigFile`: `//`, `/* */` and `#`
comments, quoted or bare option values, several entries per file.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cdc.api.errors import ConfigException

LOGIN_CONTEXT = "KafkaConnect"
EXTENSION_CLASS = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
LOGIN_MODULE = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
JAAS_KEY = "java.security.auth.login.config"
_FLAGS = ("required", "requisite", "sufficient", "optional")
# Java's StreamTokenizer: every character up to the space is whitespace.
_TOKEN = re.compile(r'[\x00-\x20]+|//[^\n]*|#[^\n]*|/\*.*?\*/|"((?:[^"\\]|\\.)*)"|([{};=])|([^\x00-\x20{};="]+)', re.S)


@dataclass(frozen=True)
class LoginModule:
    """One `ModuleClass flag key=value …;` line of a JAAS entry."""

    class_name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str, where: str) -> list[tuple[str, str]]:
    """('str'|'sym'|'word', value) tokens; comments and whitespace dropped."""
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            line = text.count("\n", 0, pos) + 1
            raise ConfigException(f"{where}: line {line}: cannot read {text[pos : pos + 20]!r} (unclosed quote?)")
        if m.group(1) is not None:
            out.append(("str", re.sub(r"\\(.)", r"\1", m.group(1))))
        elif m.group(2) is not None:
            out.append(("sym", m.group(2)))
        elif m.group(3) is not None:
            out.append(("word", m.group(3)))
        pos = m.end()
    return out


def parse_jaas(text: str, where: str = "JAAS file") -> dict[str, list[LoginModule]]:
    """Entries by login context name, each a list of its login modules."""
    tokens = _tokens(text, where)
    entries: dict[str, list[LoginModule]] = {}
    i = 0

    def expect(kind: str, value: str | None = None) -> str:
        nonlocal i
        if i >= len(tokens) or tokens[i][0] != kind or (value is not None and tokens[i][1] != value):
            got = repr(tokens[i][1]) if i < len(tokens) else "the end of the file"
            raise ConfigException(f"{where}: expected {value or kind} but found {got} (JAAS syntax: see Kafka docs)")
        i += 1
        return tokens[i - 1][1]

    while i < len(tokens):
        name = expect("word")
        expect("sym", "{")
        modules: list[LoginModule] = []
        while i < len(tokens) and tokens[i] != ("sym", "}"):
            class_name = expect("word")
            flag = expect("word")
            if flag.lower() not in _FLAGS:
                raise ConfigException(
                    f"{where}: {class_name} has control flag {flag!r}; use one of {', '.join(_FLAGS)}"
                )
            options: dict[str, str] = {}
            while i < len(tokens) and tokens[i] != ("sym", ";"):
                key = expect("word")
                expect("sym", "=")
                if i < len(tokens) and tokens[i][0] in ("str", "word"):
                    options[key] = tokens[i][1]
                    i += 1
                else:
                    expect("str")
            expect("sym", ";")
            modules.append(LoginModule(class_name, flag.lower(), options))
        expect("sym", "}")
        expect("sym", ";")
        entries.setdefault(name, []).extend(modules)
    return entries


def jaas_path(configured: str | None, environ: Mapping[str, str]) -> str | None:
    """The worker key, else `-Djava.security.auth.login.config=` (or `==`) in KAFKA_OPTS."""
    if configured:
        return configured
    opts = environ.get("KAFKA_OPTS", "")
    try:
        words = shlex.split(opts)
    except ValueError:
        words = opts.split()
    prefix = f"-D{JAAS_KEY}="
    found = None
    for word in words:
        if word.startswith(prefix):
            found = word[len(prefix) :].removeprefix("=")  # `==path` means "only this file" to the JVM
    return found or None


def credentials_file(jaas_file: str) -> str:
    """The `file` option of the `KafkaConnect` entry's PropertyFileLoginModule."""
    path = Path(jaas_file)
    if not path.is_file():
        raise ConfigException(
            f"{JAAS_KEY}: the JAAS file {jaas_file} does not exist: create it with a {LOGIN_CONTEXT} "
            f'{{ {LOGIN_MODULE} required file="/path/to/credentials.properties"; }}; entry'
        )
    entries = parse_jaas(path.read_text(encoding="utf-8"), f"JAAS file {jaas_file}")
    modules = entries.get(LOGIN_CONTEXT)
    if not modules:
        raise ConfigException(
            f"JAAS file {jaas_file} has no {LOGIN_CONTEXT} entry (found: {', '.join(entries) or 'none'}): "
            f"BasicAuthSecurityRestExtension reads the {LOGIN_CONTEXT} {{ … }}; entry"
        )
    if len(modules) > 1:
        raise ConfigException(
            f"JAAS file {jaas_file}: the {LOGIN_CONTEXT} entry has {len(modules)} login modules; "
            f"give it one {LOGIN_MODULE}"
        )
    module = modules[0]
    if module.class_name.rsplit(".", 1)[-1] != LOGIN_MODULE.rsplit(".", 1)[-1]:
        raise ConfigException(
            f"JAAS file {jaas_file}: login module {module.class_name} is not supported; "
            f'use {LOGIN_MODULE} with file="…"'
        )
    file = module.options.get("file")
    if not file:
        raise ConfigException(
            f'JAAS file {jaas_file}: {module.class_name} needs file="/path/to/credentials.properties" '
            "(one user=password per line)"
        )
    return file
