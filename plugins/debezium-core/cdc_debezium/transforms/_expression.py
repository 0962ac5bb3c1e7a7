"""A small, safe expression language for the scripting SMTs (Filter, ContentBasedRouter): `cdc.expr`.

Debezium's Filter and ContentBasedRouter run JSR-223 scripts (Groovy, JavaScript); running arbitrary
code inside the worker is not something this runtime does. `cdc.expr` reads like the one-line
Groovy/JavaScript conditions people write for them, and is parsed here into a tree that can only
read the record: no Python `eval`, no attribute of a Python object other than those listed below,
no assignment, no loops, no imports.

    value.op == 'u' && value.before.id == 2
    header.idh.value == 1 and topic.startsWith('dummy')
    value.after.region == 'eu' ? 'orders.eu' : null
    value.op in ['c', 'r'] || !(value.after?.price > 100)

- names: `key`, `value`, `keySchema`, `valueSchema`, `topic`, `header` (each header by name, as
  `{value, schema}`), `partition`, `timestamp`; literals: numbers, 'strings' or "strings",
  `true`/`false`/`null` (or `True`/`False`/`None`), lists `[a, b]`;
- `x.f` reads a struct field or a map entry (`x?.f` gives null when x is null), `x[i]` a list
  item or map entry, `x.get('f')` the same as `x.f`;
- operators: `== != < <= > >= in`, `&& || !` (or `and or not`), `+ - * / %` (`+` joins strings),
  `cond ? a : b`;
- methods on strings: startsWith, endsWith, contains, matches (a Java-syntax regex matching the
  whole string), equals, equalsIgnoreCase, toLowerCase, toUpperCase, trim, length, isEmpty; on
  lists and maps: size, isEmpty, contains, containsKey; schemas expose name, version, doc,
  optional and type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from cdc.api import Schema, Struct
from cdc_debezium.transforms._java_regex import compile_java

NAMES = ("key", "value", "keySchema", "valueSchema", "topic", "header", "partition", "timestamp")
MAX_LENGTH = 4000


class ExpressionError(ValueError):
    """The expression does not parse, names something unknown, or fails on a record."""


# -- tokens ---------------------------------------------------------------------------------
_TOKEN = re.compile(
    r"""\s*(?:
      (?P<number>\d+\.\d*(?:[eE][+-]?\d+)?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)[lLdDfF]?
    | (?P<string>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op>\?\.|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:.,()\[\]])
    )""",
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "0": "\0"}
_WORD_OPS = {"and": "&&", "or": "||", "not": "!", "in": "in"}
_CONSTANTS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    value: Any
    pos: int


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _tokens(source: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(source):
        if source[pos:].strip() == "":
            break
        m = _TOKEN.match(source, pos)
        if m is None or m.end() == pos:
            raise ExpressionError(f"unexpected character {source[pos:].lstrip()[:1]!r} at {pos}")
        start = m.start(m.lastgroup or 0)
        if m.group("number") is not None:
            text = m.group("number")
            value: Any = float(text) if any(c in text for c in ".eE") else int(text)
            out.append(_Tok("lit", text, value, start))
        elif m.group("string") is not None:
            out.append(_Tok("lit", m.group("string"), _unescape(m.group("string")[1:-1]), start))
        elif m.group("name") is not None:
            word = m.group("name")
            if word in _CONSTANTS:
                out.append(_Tok("lit", word, _CONSTANTS[word], start))
            elif word in _WORD_OPS:
                out.append(_Tok("op", _WORD_OPS[word], None, start))
            else:
                out.append(_Tok("name", word, None, start))
        else:
            out.append(_Tok("op", m.group("op"), None, start))
        pos = m.end()
    out.append(_Tok("end", "", None, len(source)))
    return out


# -- the tree -------------------------------------------------------------------------------
Node = Callable[[Mapping[str, Any]], Any]


class _Parser:
    def __init__(self, source: str) -> None:
        self.toks = _tokens(source)
        self.i = 0

    def peek(self, *texts: str) -> bool:
        t = self.toks[self.i]
        return t.kind == "op" and t.text in texts

    def take(self) -> _Tok:
        t = self.toks[self.i]
        self.i += 1
        return t

    def expect(self, text: str) -> None:
        t = self.take()
        if t.kind != "op" or t.text != text:
            shown = t.text or "the end"
            raise ExpressionError(f"expected {text!r} at {t.pos}, found {shown!r}")

    def parse(self) -> Node:
        node = self.ternary()
        t = self.toks[self.i]
        if t.kind != "end":
            raise ExpressionError(f"unexpected {t.text!r} at {t.pos}")
        return node

    def ternary(self) -> Node:
        cond = self.or_()
        if self.peek("?"):
            self.take()
            yes = self.ternary()
            self.expect(":")
            no = self.ternary()
            return lambda env: yes(env) if _truth(cond(env)) else no(env)
        return cond

    def or_(self) -> Node:
        left = self.and_()
        while self.peek("||"):
            self.take()
            right, prev = self.and_(), left
            left = lambda env, a=prev, b=right: _truth(a(env)) or _truth(b(env))  # noqa: E731
        return left

    def and_(self) -> Node:
        left = self.not_()
        while self.peek("&&"):
            self.take()
            right, prev = self.not_(), left
            left = lambda env, a=prev, b=right: _truth(a(env)) and _truth(b(env))  # noqa: E731
        return left

    def not_(self) -> Node:
        if self.peek("!"):
            self.take()
            inner = self.not_()
            return lambda env: not _truth(inner(env))
        return self.comparison()

    def comparison(self) -> Node:
        left = self.additive()
        negate = False
        if self.peek("!") and self.toks[self.i + 1].text == "in":  # `not in` after `!`/`not`
            self.take()
            negate = True
        if self.peek("==", "!=", "<", "<=", ">", ">=", "in"):
            op = self.take().text
            right = self.additive()
            compare = _COMPARE[op]
            if negate:
                return lambda env: not compare(left(env), right(env))
            return lambda env: compare(left(env), right(env))
        if negate:
            raise ExpressionError("expected 'in' after 'not'")
        return left

    def additive(self) -> Node:
        left = self.multiplicative()
        while self.peek("+", "-"):
            op = self.take().text
            right, prev = self.multiplicative(), left
            fn = _plus if op == "+" else _arith(lambda a, b: a - b, "-")
            left = lambda env, a=prev, b=right, f=fn: f(a(env), b(env))  # noqa: E731
        return left

    def multiplicative(self) -> Node:
        left = self.unary()
        while self.peek("*", "/", "%"):
            op = self.take().text
            right, prev = self.unary(), left
            fn = {"*": _arith(lambda a, b: a * b, "*"), "/": _divide, "%": _arith(_java_mod, "%")}[op]
            left = lambda env, a=prev, b=right, f=fn: f(a(env), b(env))  # noqa: E731
        return left

    def unary(self) -> Node:
        if self.peek("-"):
            self.take()
            inner = self.unary()
            return lambda env: _arith(lambda a, b: -b, "-")(0, inner(env))
        return self.postfix()

    def postfix(self) -> Node:
        node = self.primary()
        while True:
            if self.peek(".", "?."):
                safe = self.take().text == "?."
                name_tok = self.take()
                if name_tok.kind != "name":
                    raise ExpressionError(f"expected a field or method name at {name_tok.pos}")
                name = name_tok.text
                if self.peek("("):
                    args = self.arguments()
                    node = _method_node(node, name, args, safe)
                else:
                    node = _field_node(node, name, safe)
            elif self.peek("["):
                self.take()
                index = self.ternary()
                self.expect("]")
                node = _index_node(node, index)
            else:
                return node

    def arguments(self) -> list[Node]:
        self.expect("(")
        args: list[Node] = []
        if not self.peek(")"):
            args.append(self.ternary())
            while self.peek(","):
                self.take()
                args.append(self.ternary())
        self.expect(")")
        return args

    def primary(self) -> Node:
        t = self.take()
        if t.kind == "lit":
            constant = t.value
            return lambda env: constant
        if t.kind == "name":
            if t.text not in NAMES:
                raise ExpressionError(f"unknown name {t.text!r} at {t.pos}; use one of {', '.join(NAMES)}")
            name = t.text
            return lambda env: env[name]
        if t.kind == "op" and t.text == "(":
            inner = self.ternary()
            self.expect(")")
            return inner
        if t.kind == "op" and t.text == "[":
            items: list[Node] = []
            if not self.peek("]"):
                items.append(self.ternary())
                while self.peek(","):
                    self.take()
                    items.append(self.ternary())
            self.expect("]")
            return lambda env: [item(env) for item in items]
        shown = t.text or "the end"
        raise ExpressionError(f"unexpected {shown!r} at {t.pos}")


# -- semantics ------------------------------------------------------------------------------
def _truth(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if v is None:
        return False
    raise ExpressionError(f"expected true or false, got {_shown(v)}")


def _shown(v: Any) -> str:
    if isinstance(v, Struct):
        return "a struct"
    return "null" if v is None else f"{type(v).__name__} {v!r}"


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _ordered(op: str, f: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if (_number(a) and _number(b)) or (isinstance(a, str) and isinstance(b, str)):
            return f(a, b)
        raise ExpressionError(f"cannot compare {_shown(a)} {op} {_shown(b)}")

    return compare


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False
    return bool(a == b)


def _contains(a: Any, b: Any) -> bool:
    if isinstance(b, str):
        if not isinstance(a, str):
            raise ExpressionError(f"cannot look for {_shown(a)} in a string")
        return a in b
    if isinstance(b, list | tuple):
        return any(_equal(a, x) for x in b)
    if isinstance(b, Mapping):
        return a in b
    raise ExpressionError(f"cannot look for a value in {_shown(b)}")


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": _equal,
    "!=": lambda a, b: not _equal(a, b),
    "<": _ordered("<", lambda a, b: a < b),
    "<=": _ordered("<=", lambda a, b: a <= b),
    ">": _ordered(">", lambda a, b: a > b),
    ">=": _ordered(">=", lambda a, b: a >= b),
    "in": _contains,
}


def _java_str(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _plus(a: Any, b: Any) -> Any:
    if isinstance(a, str) or isinstance(b, str):
        return _java_str(a) + _java_str(b)
    return _arith(lambda x, y: x + y, "+")(a, b)


def _arith(f: Callable[[Any, Any], Any], op: str) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if _number(a) and _number(b):
            return f(a, b)
        raise ExpressionError(f"cannot compute {_shown(a)} {op} {_shown(b)}")

    return apply


def _java_mod(a: Any, b: Any) -> Any:
    if b == 0:
        raise ExpressionError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        return abs(a) % abs(b) * (1 if a >= 0 else -1)
    return a % b


def _divide(a: Any, b: Any) -> Any:
    if not (_number(a) and _number(b)):
        raise ExpressionError(f"cannot compute {_shown(a)} / {_shown(b)}")
    if b == 0:
        raise ExpressionError("division by zero")
    if isinstance(a, int) and isinstance(b, int):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    return a / b


_SCHEMA_ATTRS: dict[str, Callable[[Schema], Any]] = {
    "name": lambda s: s.name,
    "version": lambda s: s.version,
    "doc": lambda s: s.doc,
    "optional": lambda s: s.optional,
    "type": lambda s: s.type.name,
}


def _field(target: Any, name: str) -> Any:
    if isinstance(target, Struct):
        field = target.schema.field(name)
        if field is None:
            raise ExpressionError(f"the struct has no field {name!r}")
        return target.get(field)
    if isinstance(target, Mapping):
        return target.get(name)
    if isinstance(target, Schema) and name in _SCHEMA_ATTRS:
        return _SCHEMA_ATTRS[name](target)
    raise ExpressionError(f"{_shown(target)} has no field {name!r}")


def _field_node(target: Node, name: str, safe: bool) -> Node:
    def read(env: Mapping[str, Any]) -> Any:
        base = target(env)
        if base is None:
            if safe:
                return None
            raise ExpressionError(f"cannot read {name!r} of null (use ?. to get null instead)")
        return _field(base, name)

    return read


def _index_node(target: Node, index: Node) -> Node:
    def read(env: Mapping[str, Any]) -> Any:
        base, i = target(env), index(env)
        if isinstance(base, list | tuple | str) and isinstance(i, int) and not isinstance(i, bool):
            if not -len(base) <= i < len(base):
                raise ExpressionError(f"index {i} out of range")
            return base[i]
        if isinstance(i, str):
            if base is None:
                raise ExpressionError(f"cannot read {i!r} of null")
            return _field(base, i)
        raise ExpressionError(f"cannot index {_shown(base)} with {_shown(i)}")

    return read


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return compile_java("matches", pattern)
    except Exception as e:
        raise ExpressionError(f"invalid regular expression {pattern!r}") from e


def _size(target: Any) -> int:
    if isinstance(target, Struct):
        return len(target.schema.fields)
    return len(target)


_STRING_METHODS: dict[str, tuple[int, Callable[..., Any]]] = {
    "startsWith": (1, lambda s, p: s.startswith(str(p))),
    "endsWith": (1, lambda s, p: s.endswith(str(p))),
    "contains": (1, lambda s, p: str(p) in s),
    "matches": (1, lambda s, p: _regex(str(p)).fullmatch(s) is not None),
    "equals": (1, lambda s, o: _equal(s, o)),
    "equalsIgnoreCase": (1, lambda s, o: isinstance(o, str) and s.lower() == o.lower()),
    "toLowerCase": (0, lambda s: s.lower()),
    "toUpperCase": (0, lambda s: s.upper()),
    "trim": (0, lambda s: s.strip()),
    "length": (0, lambda s: len(s)),
    "isEmpty": (0, lambda s: len(s) == 0),
}
_COLLECTION_METHODS: dict[str, tuple[int, Callable[..., Any]]] = {
    "size": (0, _size),
    "isEmpty": (0, lambda c: _size(c) == 0),
    "contains": (1, lambda c, x: _contains(x, list(c.values()) if isinstance(c, Mapping) else c)),
    "containsKey": (1, lambda c, k: (c.schema.field(k) is not None) if isinstance(c, Struct) else k in c),
    "get": (1, lambda c, k: _field(c, k) if isinstance(k, str) else _index_node(lambda e: c, lambda e: k)({})),
}


def _method_node(target: Node, name: str, args: list[Node], safe: bool) -> Node:
    if name not in _STRING_METHODS and name not in _COLLECTION_METHODS:
        known = sorted(set(_STRING_METHODS) | set(_COLLECTION_METHODS))
        raise ExpressionError(f"unknown method {name!r}; methods are {', '.join(known)}")

    def call(env: Mapping[str, Any]) -> Any:
        base = target(env)
        if base is None:
            if safe:
                return None
            raise ExpressionError(f"cannot call {name}() on null (use ?. to get null instead)")
        table = _STRING_METHODS if isinstance(base, str) else _COLLECTION_METHODS
        if name not in table or not isinstance(base, str | list | tuple | Mapping | Struct):
            raise ExpressionError(f"{_shown(base)} has no method {name}()")
        arity, fn = table[name]
        if len(args) != arity:
            raise ExpressionError(f"{name}() takes {arity} argument(s), got {len(args)}")
        return fn(base, *(a(env) for a in args))

    return call


@dataclass(frozen=True)
class Expression:
    """A parsed `cdc.expr` expression; `evaluate(bindings)` reads only what the bindings hold."""

    source: str
    _root: Node

    @classmethod
    def parse(cls, source: str) -> Expression:
        if len(source) > MAX_LENGTH:
            raise ExpressionError(f"the expression is longer than {MAX_LENGTH} characters")
        if not source.strip():
            raise ExpressionError("the expression is empty")
        try:
            return cls(source, _Parser(source).parse())
        except RecursionError as e:
            raise ExpressionError("the expression nests too deeply") from e

    def evaluate(self, bindings: Mapping[str, Any]) -> Any:
        try:
            return self._root(bindings)
        except RecursionError as e:  # pragma: no cover - bounded by MAX_LENGTH
            raise ExpressionError("the expression nests too deeply") from e
