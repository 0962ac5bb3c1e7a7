"""io.debezium.transforms.TimezoneConverter: timestamps of change events shown in another time zone.

Debezium's TimezoneConverter, for `converted.timezone` (a region such as `America/Los_Angeles`
or an offset `+hh:mm[:ss]`):

- ZonedTimestamp / ZonedTime strings: the same instant, written with the zone's offset
  (ZonedTime uses the zone's current offset);
- Timestamp / MicroTimestamp / NanoTimestamp and Kafka Connect Timestamp (wall-clock values stored
  as if UTC): the wall-clock time read in the converted zone;
- `source.ts_ms` / `ts_us` / `ts_ns` (only when named in `include.list`): the instant plus the offset;
- Date and Time types are never converted (a warning when listed).

`include.list` / `exclude.list` (one of them) hold `source:<table>[:<field>]`, `topic:<topic>[:<field>]`
or `<table or topic>[:<field>]` rules; an item without a prefix keeps the previous item's prefix
(`source:a,b` lists two tables). Fields are `before.x`, `after.x`, `source.x` or bare `x` (before and
after). The record's own value is never modified: changed structs are copies.
"""

from __future__ import annotations

import datetime
import logging
import re
import zoneinfo
from collections.abc import Mapping
from typing import Any

from cdc.api import NO_DEFAULT_VALUE, AbstractConfig, ConfigDef, ConfigType, Importance, Struct, Transformation
from cdc.api import Date as ConnectDate
from cdc.api import Time as ConnectTime
from cdc.api import Timestamp as ConnectTimestamp
from cdc_debezium import logical_types
from cdc_debezium.transforms._support import R, config_error, is_envelope

log = logging.getLogger(__name__)

CONVERTED_TIMEZONE = "converted.timezone"
INCLUDE_LIST = "include.list"
EXCLUDE_LIST = "exclude.list"

MICRO_TIMESTAMP = logical_types.MICRO_TIMESTAMP
NANO_TIMESTAMP = logical_types.NANO_TIMESTAMP
TIMESTAMP = logical_types.TIMESTAMP
ZONED_TIMESTAMP = logical_types.ZONED_TIMESTAMP
ZONED_TIME = logical_types.ZONED_TIME
KAFKA_TIMESTAMP = ConnectTimestamp.LOGICAL_NAME
SUPPORTED = frozenset({MICRO_TIMESTAMP, NANO_TIMESTAMP, TIMESTAMP, ZONED_TIMESTAMP, ZONED_TIME, KAFKA_TIMESTAMP})
UNSUPPORTED = frozenset(
    {
        logical_types.DATE,
        logical_types.MICRO_TIME,
        logical_types.NANO_TIME,
        logical_types.TIME,
        ConnectDate.LOGICAL_NAME,
        ConnectTime.LOGICAL_NAME,
    }
)
EPOCH_FIELDS = ("ts_ms", "ts_us", "ts_ns")

_OFFSET = re.compile(r"^([+-])(\d{2}):(\d{2})(?::(\d{2}))?$")
_ITEM_PART = re.compile(r'^[".\w\s]+$')
_ZONED = re.compile(
    r"^(\d{4,}-\d{2}-\d{2}T)?(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}(?::\d{2})?)$"
)
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_UTC_NAIVE_EPOCH = datetime.datetime(1970, 1, 1)


class _Zone:
    """A fixed offset or a region, answering Java's ZoneRules.getOffset questions."""

    def __init__(self, name: str) -> None:
        match = _OFFSET.match(name)
        self.fixed: datetime.timedelta | None = None
        self.region: zoneinfo.ZoneInfo | None = None
        if match:
            sign = -1 if match.group(1) == "-" else 1
            h, m, s = int(match.group(2)), int(match.group(3)), int(match.group(4) or 0)
            if h > 18 or m > 59 or s > 59:
                raise ValueError(name)
            self.fixed = sign * datetime.timedelta(hours=h, minutes=m, seconds=s)
        else:
            if not name or name.startswith("/") or ".." in name:
                raise ValueError(name)
            self.region = zoneinfo.ZoneInfo(name)

    def offset_at_local(self, local: datetime.datetime) -> datetime.timedelta:
        """ZoneRules.getOffset(LocalDateTime): in a gap or an overlap, the offset before the transition."""
        if self.fixed is not None:
            return self.fixed
        assert self.region is not None
        offset = local.replace(tzinfo=self.region, fold=0).utcoffset()
        assert offset is not None
        return offset

    def offset_at_instant(self, instant: datetime.datetime) -> datetime.timedelta:
        if self.fixed is not None:
            return self.fixed
        assert self.region is not None
        offset = instant.astimezone(self.region).utcoffset()
        assert offset is not None
        return offset


def _format_offset(offset: datetime.timedelta) -> str:
    total = int(offset.total_seconds())
    if total == 0:
        return "Z"
    sign = "-" if total < 0 else "+"
    total = abs(total)
    h, rest = divmod(total, 3600)
    m, s = divmod(rest, 60)
    return f"{sign}{h:02d}:{m:02d}" + (f":{s:02d}" if s else "")


def _format_time(hour: int, minute: int, second: int, nanos: int) -> str:
    """ISO_LOCAL_TIME: seconds always, the fraction only when non-zero and without trailing zeros."""
    out = f"{hour:02d}:{minute:02d}:{second:02d}"
    if nanos:
        out += "." + f"{nanos:09d}".rstrip("0")
    return out


def _parse_zoned(value: str) -> tuple[datetime.datetime | None, int, int, int, int, datetime.timedelta]:
    """(date part as midnight or None, hour, minute, second, nanos, offset) of an ISO offset string."""
    match = _ZONED.match(value.strip())
    if not match:
        raise ValueError(f"not an ISO offset date-time or time: {value!r}")
    date_part, hh, mm, ss, frac, off = match.groups()
    date = datetime.datetime.strptime(date_part[:-1], "%Y-%m-%d") if date_part else None
    nanos = int((frac or "").ljust(9, "0")) if frac else 0
    if off == "Z":
        offset = datetime.timedelta(0)
    else:
        o = _OFFSET.match(off)
        assert o is not None
        sign = -1 if o.group(1) == "-" else 1
        offset = sign * datetime.timedelta(hours=int(o.group(2)), minutes=int(o.group(3)), seconds=int(o.group(4) or 0))
    return date, int(hh), int(mm), int(ss or 0), nanos, offset


def _timezone(name: str, value: Any) -> None:
    if value is None or not str(value).strip():
        raise config_error(name, value, "must be set to a region (America/Los_Angeles) or an offset (+08:00)")
    try:
        _Zone(str(value).strip())
    except (ValueError, zoneinfo.ZoneInfoNotFoundError, OSError) as e:
        raise config_error(
            name,
            value,
            "Invalid timezone format. Please specify either a geographic timezone (e.g. America/Los_Angeles) or "
            "a UTC offset in the format of +/-hh:mm, (e.g. +08:00).",
        ) from e


def _rules(name: str, value: Any) -> None:
    if not value:
        return
    for i, item in enumerate(value):
        parts = item.split(":")
        ok = 1 <= len(parts) <= 3 and all(_ITEM_PART.match(p) for p in parts) and (i > 0 or len(parts) >= 2)
        if not ok:
            raise config_error(
                name,
                ",".join(value),
                f"Invalid {name.split('.')[0]} list format. Please specify a list of rules in the format of "
                '"source:<tablename>:<fieldnames>", "topic:<topicname>:<fieldnames>", "<matchname>:<fieldnames>"',
            )


CONFIG_DEF = (
    ConfigDef()
    .define(CONVERTED_TIMEZONE, ConfigType.STRING, NO_DEFAULT_VALUE, _timezone, Importance.HIGH,
            "The time zone to convert timestamps to: a region (America/Los_Angeles) or an offset (+08:00).")
    .define(INCLUDE_LIST, ConfigType.LIST, "", _rules, Importance.HIGH,
            "Rules for the events and fields to convert: source:<table>[:<field>], topic:<topic>[:<field>] or "
            "<table or topic>[:<field>].")
    .define(EXCLUDE_LIST, ConfigType.LIST, "", _rules, Importance.HIGH,
            "Rules for the events and fields not to convert, in the include.list format.")
)  # fmt: skip

ALL, INCLUDE, EXCLUDE = "all", "include", "exclude"


class TimezoneConverter(Transformation[R]):
    """io.debezium.transforms.TimezoneConverter"""

    def configure(self, configs: Mapping[str, Any]) -> None:
        config = AbstractConfig(CONFIG_DEF, configs)
        self._zone = _Zone(str(config.get_string(CONVERTED_TIMEZONE)).strip())
        include = config.get_list(INCLUDE_LIST) or []
        exclude = config.get_list(EXCLUDE_LIST) or []
        if include and exclude:
            raise config_error(
                EXCLUDE_LIST,
                ",".join(exclude),
                f"Both include and exclude lists are specified. Please specify only one ({INCLUDE_LIST} or "
                f"{EXCLUDE_LIST}).",
            )
        self._include, self._exclude = bool(include), bool(exclude)
        self._topics: dict[str, set[str]] = {}
        self._tables: dict[str, set[str]] = {}
        self._unprefixed: dict[str, set[str]] = {}
        prefix: str | None = None
        for item in include or exclude:
            parts = item.split(":")
            field: str | None = None
            if len(parts) >= 2 and parts[0].lower() in ("source", "topic"):
                prefix = parts[0].lower()
                name = parts[1]
                field = parts[2] if len(parts) == 3 else None
            else:
                name = parts[0]
                field = parts[1] if len(parts) >= 2 else None
            target = {"topic": self._topics, "source": self._tables}.get(prefix or "", self._unprefixed)
            fields = target.setdefault(name, set())
            if field is not None:
                fields.add(field)

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    # -- which fields -----------------------------------------------------------------------
    def apply(self, record: R) -> R | None:
        if record.value is None or not is_envelope(record.value_schema) or not isinstance(record.value, Struct):
            return record
        value = record.value
        source = value.get_without_default("source") if value.schema.field("source") else None
        table = (
            source.get_without_default("table") if isinstance(source, Struct) and source.schema.field("table") else None
        )
        topic = record.topic
        plan: tuple[str, set[str]] | None = None
        if not self._include and not self._exclude:
            if topic not in self._topics and table not in self._tables and table not in self._unprefixed:
                plan = (ALL, set())
        else:
            match, fields = self._match(table, topic)
            if self._include:
                if match is not None:
                    plan = (INCLUDE, fields) if fields else (ALL, set())
            elif match is None:
                plan = (ALL, set())
            elif fields:
                plan = (EXCLUDE, fields)
        if plan is None:
            return record
        converted = self._convert_envelope(value, *plan)
        if converted is value:
            return record
        return record.new_record(
            record.topic,
            record.kafka_partition,
            record.key_schema,
            record.key,
            record.value_schema,
            converted,
            record.timestamp,
        )

    def _match(self, table: Any, topic: str) -> tuple[str | None, set[str]]:
        if topic in self._topics:
            return topic, self._topics[topic]
        if table in self._tables:
            return table, self._tables[table]
        if topic in self._unprefixed:
            return topic, self._unprefixed[topic]
        if table in self._unprefixed:
            return table, self._unprefixed[table]
        return None, set()

    def _convert_envelope(self, value: Struct, kind: str, fields: set[str]) -> Struct:
        per_part: dict[str, set[str]] = {"before": set(), "after": set(), "source": set()}
        for f in fields:
            head, dot, rest = f.partition(".")
            if dot and head in per_part:
                per_part[head].add(rest)
            else:
                per_part["before"].add(f)
                per_part["after"].add(f)
        values = []
        changed = False
        for field in value.schema.fields:
            current = value.get_without_default(field.name)
            wanted = field.name in ("before", "after") or (field.name == "source" and per_part["source"])
            if wanted and isinstance(current, Struct):
                updated = self._convert_struct(field.name, current, kind, per_part[field.name])
                changed |= updated is not current
                current = updated
            values.append(current)
        return Struct.from_values(value.schema, values) if changed else value

    def _convert_struct(self, part: str, struct: Struct, kind: str, fields: set[str]) -> Struct:
        values = []
        changed = False
        for field in struct.schema.fields:
            current = struct.get_without_default(field.name)
            name = field.schema.name
            epoch = part == "source" and field.name in EPOCH_FIELDS
            wanted = (
                kind == ALL
                or (kind == INCLUDE and field.name in fields)
                or (kind == EXCLUDE and field.name not in fields)
            )
            if current is not None and wanted and (name is not None or epoch):
                if name in UNSUPPORTED:
                    log.warning("Skipping conversion for unsupported logical type: %s for field: %s", name, field.name)
                elif name in SUPPORTED:
                    current = self._converted(name, current)
                    changed = True
                elif name is None and epoch:
                    current = self._epoch(field.name, current)
                    changed = True
            values.append(current)
        return Struct.from_values(struct.schema, values) if changed else struct

    # -- conversions ------------------------------------------------------------------------
    def _converted(self, name: str, value: Any) -> Any:
        if name == ZONED_TIMESTAMP:
            date, hh, mm, ss, nanos, offset = _parse_zoned(str(value))
            if date is None:
                raise ValueError(f"ZonedTimestamp without a date: {value!r}")
            utc_local = date.replace(hour=hh, minute=mm, second=ss) - offset
            new_offset = self._zone.offset_at_local(date.replace(hour=hh, minute=mm, second=ss))
            local = utc_local + new_offset
            clock = _format_time(local.hour, local.minute, local.second, nanos)
            return f"{local:%Y-%m-%d}T{clock}{_format_offset(new_offset)}"
        if name == ZONED_TIME:
            _, hh, mm, ss, nanos, offset = _parse_zoned(str(value))
            new_offset = self._zone.offset_at_instant(datetime.datetime.now(datetime.UTC))
            seconds = (hh * 3600 + mm * 60 + ss - int(offset.total_seconds()) + int(new_offset.total_seconds())) % 86400
            return _format_time(seconds // 3600, seconds // 60 % 60, seconds % 60, nanos) + _format_offset(new_offset)
        if name in (TIMESTAMP, MICRO_TIMESTAMP, NANO_TIMESTAMP):
            per_second = {TIMESTAMP: 1_000, MICRO_TIMESTAMP: 1_000_000, NANO_TIMESTAMP: 1_000_000_000}[name]
            seconds, fraction = divmod(int(value), per_second)
            local = _UTC_NAIVE_EPOCH + datetime.timedelta(seconds=seconds)
            shift = int(self._zone.offset_at_local(local).total_seconds())
            return (seconds - shift) * per_second + fraction
        if name == KAFKA_TIMESTAMP and isinstance(value, datetime.datetime):
            local = value.astimezone(datetime.UTC).replace(tzinfo=None) if value.tzinfo else value
            shifted = local - self._zone.offset_at_local(local)
            return shifted.replace(tzinfo=value.tzinfo and datetime.UTC) if value.tzinfo else shifted
        return value

    def _epoch(self, field: str, value: Any) -> Any:
        if not isinstance(value, int):
            raise ValueError(f"Epoch field value should be a long, got {type(value).__name__}")
        per_second = {"ts_ms": 1_000, "ts_us": 1_000_000, "ts_ns": 1_000_000_000}[field]
        instant = _EPOCH + datetime.timedelta(seconds=value // per_second)
        return value + int(self._zone.offset_at_instant(instant).total_seconds()) * per_second
