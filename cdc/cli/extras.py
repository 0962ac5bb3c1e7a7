"""Commands other parts of `cdc` add to the CLI, found as entry points, and the extras they need.

Kafka Connect finds its plugins through Java's ServiceLoader, so the runtime never names
them; `cdc` finds the job layer's commands (`cdc run`, `validate`, `status`, `verify`) in the
`cdc.commands` entry-point group and its job-file reader in `cdc.job_files`. The core
commands (`standalone`, `worker`, `plugins`, `topics`, `offsets`) therefore never import
the job layer, and a `cdc` installed without the `jobs` extra still starts: its job commands
say in one line what to install.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

import click

from cdc.cli._common import fail

COMMANDS = "cdc.commands"
JOB_FILES = "cdc.job_files"

_REQUIREMENT = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?[^;]*(?:;(.*))?$")


class MissingExtra(ImportError):
    """An extra of the `cdc` distribution whose requirements are not installed."""

    def __init__(self, extra: str, missing: list[str]) -> None:
        self.extra = extra
        self.missing = missing
        super().__init__(f"needs the {extra} extra ({', '.join(missing)} not installed): pip install 'cdc[{extra}]'")


def missing_requirements(extra: str, distribution: str = "cdc") -> list[str]:
    """The distributions `distribution[extra]` requires that are not installed (by name only:
    pip checks the versions). Nothing when `distribution` itself is not installed (a source
    checkout): its imports then say what is missing."""
    try:
        requires = importlib.metadata.requires(distribution) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    wanted = re.compile(r"""\bextra\s*==\s*["']""" + re.escape(extra) + r"""["']""")
    missing: list[str] = []
    for requirement in requires:
        match = _REQUIREMENT.match(requirement)
        if match is None or not wanted.search(match.group(2) or ""):
            continue
        try:
            importlib.metadata.distribution(match.group(1))
        except importlib.metadata.PackageNotFoundError:
            missing.append(match.group(1))
    return missing


def require_extra(extra: str) -> None:
    """Raise `MissingExtra` unless everything `cdc[extra]` requires is installed."""
    if missing := missing_requirements(extra):
        raise MissingExtra(extra, missing)


def _entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """The group's entry points by name; the first one on sys.path wins a name."""
    found: dict[str, importlib.metadata.EntryPoint] = {}
    for ep in importlib.metadata.entry_points(group=group):
        found.setdefault(ep.name, ep)
    return found


def _unavailable(name: str, reason: str) -> click.Command:
    """A stand-in for a command that cannot load: any arguments, --help included, print why."""

    def explain(args: tuple[str, ...]) -> None:
        fail(f"cdc {name} {reason}")

    return click.Command(
        name,
        callback=explain,
        params=[click.Argument(["args"], nargs=-1, type=click.UNPROCESSED)],
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
        help=f"Not available: {reason}.",
        short_help=f"Not available: {reason}.",
    )


class EntryPointGroup(click.Group):
    """A click group whose commands are its own plus those in the `cdc.commands` entry points
    (loaded only when listed or run; a built-in name is never replaced)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *_entry_points(COMMANDS)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        ep = _entry_points(COMMANDS).get(cmd_name)
        if ep is None:
            return None
        try:
            loaded = ep.load()
        except MissingExtra as e:
            return _unavailable(cmd_name, str(e))
        except ImportError as e:  # a broken install: say which module, not a traceback
            return _unavailable(cmd_name, f"cannot be loaded from {ep.value} ({e})")
        if not isinstance(loaded, click.Command):
            return _unavailable(cmd_name, f"cannot be loaded: {ep.value} is not a click command")
        return loaded


class JobFile(Protocol):
    """What the core commands need of a job file: the job's name, the worker config of its
    transport and stores, and its lock (held by a running `cdc run`)."""

    @property
    def name(self) -> str: ...

    def worker_config(self) -> dict[str, str]: ...

    def lock(self, action: str) -> AbstractContextManager[Any]: ...


def open_job_file(path: str) -> JobFile:
    """The job file at `path`, read by the job layer's `cdc.job_files` entry point; without
    the job layer, one line saying to install it or to give a worker file instead."""
    eps = list(_entry_points(JOB_FILES).values())
    advice = "or give --worker WORKER_PROPERTIES instead of a job file"
    if not eps:
        fail(f"reading a job file needs the job layer: pip install 'cdc[jobs]', {advice}")
    try:
        opener: Callable[[str], JobFile] = eps[0].load()
    except MissingExtra as e:
        fail(f"reading a job file {e}, {advice}")
    return opener(path)
