"""What a job check reports: a problem with its YAML path and line, errors and warnings.

Like Kafka Connect's `ConfigValue` error messages, each names the key; unlike them, every
problem of a file is collected (`cdc validate` prints them all, so a user fixes a file in one
pass), and `JobError` raises the first one for commands that need a valid job.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from cdc.api.errors import ConfigException
from cdc.jobs.paths import format_path


@dataclass(frozen=True)
class JobProblem:
    """One problem at a YAML path (`sink.tables['shop.orders'].mode`), with its line."""

    path: tuple[str | int, ...]
    message: str
    line: int | None = None
    warning: bool = False  # worth a look, but the job runs

    def render(self, filename: str) -> str:
        where = f"{filename}:{self.line}" if self.line else filename
        return f"{where}: {format_path(self.path)}: {self.message}"


class JobError(ConfigException):
    """The first problem of an invalid job, as one line."""

    def __init__(self, filename: str, problems: list[JobProblem]) -> None:
        self.problems = problems
        self.filename = filename
        first = problems[0]
        more = f" (and {len(problems) - 1} more; run `cdc validate {filename}`)" if len(problems) > 1 else ""
        super().__init__(first.render(filename) + more, format_path(first.path))


class Collector:
    """Errors and warnings of one job file, each with the line of its path (or of the
    nearest enclosing one that has a line)."""

    def __init__(self, lines: dict[tuple[str | int, ...], int]) -> None:
        self.lines = lines
        self.problems: list[JobProblem] = []
        self.warnings: list[JobProblem] = []

    def add(self, path: tuple[str | int, ...], message: str) -> None:
        self.problems.append(JobProblem(tuple(path), message, self._line(path)))

    def warn(self, path: tuple[str | int, ...], message: str) -> None:
        self.warnings.append(JobProblem(tuple(path), message, self._line(path), warning=True))

    def _line(self, path: tuple[str | int, ...]) -> int | None:
        line = None
        for n in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:n]))
            if line:
                break
        return line


def did_you_mean(word: str, candidates: list[str]) -> str:
    """`; did you mean 'regex'?` for the closest candidate, or nothing."""
    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
