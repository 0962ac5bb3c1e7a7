"""The job file's text and YAML, with the line of every key and the keys YAML would mangle.

PyYAML's composed node tree gives each key's line (the events carry marks, the loaded data
does not), so every problem can name the line a user should look at.
"""

from __future__ import annotations

import codecs
import json
from pathlib import Path
from typing import Any

import yaml

from cdc.api.errors import ConfigException
from cdc.jobs.validation.problems import JobProblem


def read_job_text(path: str | Path) -> str:
    """The job file's text; UTF-8 (UTF-16/32 with a byte-order mark, as YAML allows)."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ConfigException(f"{path}: cannot read the job file ({e.strerror}); check the path") from None
    boms = (
        (codecs.BOM_UTF32_LE, "utf-32"),
        (codecs.BOM_UTF32_BE, "utf-32"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    )
    encoding = next((enc for bom, enc in boms if data.startswith(bom)), "utf-8-sig")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ConfigException(
            f"{path}:{line}: the job file is not valid {encoding.removesuffix('-sig').upper()} "
            f"(byte 0x{data[e.start]:02x}); save it as UTF-8"
        ) from None


def _lines(node: yaml.Node, path: tuple[str | int, ...], out: dict[tuple[str | int, ...], int]) -> None:
    out.setdefault(path, node.start_mark.line + 1)  # a key's own line wins over its value's
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else str(k.value)
            out[(*path, key)] = k.start_mark.line + 1
            _lines(v, (*path, key), out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _lines(item, (*path, i), out)


# A job file is a few dozen keys a handful of levels deep. Aliases (`*name`) copy their anchor's
# value, aliases inside it included, so nine lines of nested aliases ("billion laughs") stand
# for 10^9 values, and every check that walks the job would walk them all. The composed node
# graph shares each anchored node, so its expanded size is counted in time linear in the file
# before anything walks it.
MAX_ALIAS_EXPANSION = 10_000  # values that aliases may add to the job, nested aliases counted each time
MAX_DEPTH = 64  # nesting of mappings and sequences


class YamlLimitError(yaml.YAMLError):
    """A job file YAML can read, but that is not a job file: aliases that expand without bound,
    an alias inside its own anchor, nesting deeper than any job."""

    def __init__(self, problem: str, line: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def _check_expansion(root: yaml.Node) -> None:
    """Raise YamlLimitError when aliases make the job larger than MAX_ALIAS_EXPANSION values
    beyond what the file writes out, when an alias refers to a value it is inside of (PyYAML
    builds a cycle), or when the nesting is deeper than MAX_DEPTH."""
    sizes: dict[int, int] = {}  # node id -> values in its expanded tree (itself included)
    heights: dict[int, int] = {}  # node id -> levels of its expanded tree
    open_: set[int] = set()  # nodes on the current path: an edge back to one is a cycle
    distinct = 0
    # Iterative post-order walk, each node once: a deep file must not hit Python's recursion limit here.
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            children = _children(node)
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            heights[id(node)] = 1 + max((heights[id(c)] for c in children), default=0)
            open_.discard(id(node))
            continue
        if id(node) in sizes:
            continue
        distinct += 1
        open_.add(id(node))
        stack.append((node, True))
        for child in reversed(_children(node)):
            if id(child) in open_:
                raise YamlLimitError(
                    "an alias refers to the value it is part of (a recursive anchor); write the value out instead",
                    child.start_mark.line + 1,
                )
            stack.append((child, False))
    if heights[id(root)] > MAX_DEPTH:
        raise YamlLimitError(
            f"the YAML is nested more than {MAX_DEPTH} levels deep (aliases included); a job file needs a handful",
            None,
        )
    if sizes[id(root)] - distinct > MAX_ALIAS_EXPANSION:
        raise YamlLimitError(
            f"aliases (*name) expand the job by more than {MAX_ALIAS_EXPANSION} values (nested aliases count each "
            f"time they are copied: {sizes[id(root)]} values in all); write the repeated values out, or use "
            "fewer nested aliases",
            None,
        )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def parse(text: str) -> tuple[Any, dict[tuple[str | int, ...], int], yaml.Node | None]:
    """The loaded job, the line of each path and the composed node tree, from one parse.

    Raises yaml.YAMLError (YamlLimitError for the limits above) before anything walks the
    aliases' expansion."""
    lines: dict[tuple[str | int, ...], int] = {}
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:  # PyYAML composes recursively: deep nesting ends here first
            raise YamlLimitError(
                f"the YAML is nested more than {MAX_DEPTH} levels deep; a job file needs a handful", None
            ) from None
        if node is None:
            return None, lines, None
        _check_expansion(node)
        _lines(node, (), lines)
        return loader.construct_document(node), lines, node
    finally:
        loader.dispose()


_STR_TAG = "tag:yaml.org,2002:str"


_MERGE_TAG = "tag:yaml.org,2002:merge"


def key_problems(node: yaml.Node, path: tuple[str | int, ...]) -> list[JobProblem]:
    """Keys YAML would mangle without a word: a repeated key (the last one silently wins) and a
    key that is not a string (`yes:` loads as a boolean, `5:` as a number, `~:` as null)."""
    problems: list[JobProblem] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for k, v in node.value:
            line = k.start_mark.line + 1
            if not isinstance(k, yaml.ScalarNode) or k.tag not in (_STR_TAG, _MERGE_TAG):
                written = k.value if isinstance(k, yaml.ScalarNode) else "a collection"
                problems.append(
                    JobProblem(
                        path,
                        f"key {written!r} is not a string (YAML reads it as {k.tag.rsplit(':', 1)[-1]}); "
                        f"quote it: {json.dumps(str(written))}",
                        line,
                    )
                )
                continue
            if k.tag == _STR_TAG and k.value in seen:
                problems.append(
                    JobProblem(
                        (*path, k.value),
                        f"key {k.value!r} is given twice (lines {seen[k.value]} and {line}); keep one",
                        line,
                    )
                )
            seen.setdefault(k.value, line)
            problems += key_problems(v, (*path, k.value))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            problems += key_problems(item, (*path, i))
    return problems


def parse_job_yaml(text: str) -> tuple[dict[str, Any] | None, dict[tuple[str | int, ...], int], list[JobProblem]]:
    """The job as a mapping with the line of each path, or None and the problems that stop
    any further check (invalid YAML, not a mapping, a repeated or non-string key)."""
    try:
        data, lines, node = parse(text)
    except YamlLimitError as e:
        return None, {}, [JobProblem((), f"YAML refused: {e.problem}", e.line)]
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(e, "problem", None) or str(e)
        return None, {}, [JobProblem((), f"invalid YAML: {problem}", line)]
    if not isinstance(data, dict):
        return None, lines, [JobProblem((), "a job must be a YAML mapping with name, source and sink", 1)]
    if problems := key_problems(node, ()) if node is not None else []:
        return None, lines, problems
    return data, lines, []
