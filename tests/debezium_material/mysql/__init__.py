"""Debezium 3.6.1's binlog connector test scripts (ddl/*.sql) and the loader its ITs use, re-expressed."""

from __future__ import annotations

import re
from pathlib import Path

DDL_DIR = Path(__file__).parent / "ddl"
_TRAILING_COMMENT = re.compile(r"^(.*)--.*$")


def script_names() -> list[str]:
    """Every vendored script, by its template name (the file name without .sql)."""
    return sorted(p.stem for p in DDL_DIR.glob("*.sql"))


def statements(template: str, database: str) -> list[str]:
    """The statements Debezium's UniqueDatabase.createAndInitialize runs for `template` in `database`.

    As there: the database is dropped, created and used first; lines are trimmed, comment lines
    and blank lines dropped, a trailing `-- comment` cut (from the line's last `--`), `$DBNAME$`
    replaced; the lines are joined and split at every `;`, and `$$` then stands for `;` (the
    scripts' way of writing routine bodies).
    """
    text = (DDL_DIR / f"{template}.sql").read_text(encoding="utf-8")
    head = [f"DROP DATABASE IF EXISTS `{database}`;", f"CREATE DATABASE `{database}`;", f"USE `{database}`;"]
    lines = []
    for raw in [*head, *text.splitlines()]:
        line = raw.strip()
        if not line or line.startswith("--"):
            continue
        m = _TRAILING_COMMENT.match(line)
        lines.append((m.group(1) if m else line).replace("$DBNAME$", database))
    return [s.replace("$$", ";") for s in "\n".join(lines).split(";") if s.strip()]
