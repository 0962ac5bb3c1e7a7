"""The topic names a job's tools derive from its source (cdc/jobs/topics.py): a PostgreSQL `topic.delimiter`
other than '.' is refused (the sink would read none of the topics the connector writes), and the heartbeat
topic follows Debezium's `topic.heartbeat.prefix`, as the PostgreSQL connector names it."""

from __future__ import annotations

import pytest

from cdc.jobs.load import validate_job_text
from cdc.jobs.topics import heartbeat_topic, heartbeat_topic_name
from cdc_postgres.topics import PostgresTopicNaming

pytestmark = pytest.mark.unit


def _job(source_extra: str = "", transforms: str = "") -> str:
    return f"""name: j
source:
  connector.class: postgres
  database.hostname: h
  database.user: u
  database.dbname: d
  topic.prefix: shop
{source_extra}{transforms}transport: {{type: embedded, state.dir: /tmp/nowhere}}
sink: {{type: delta, path: /tmp/lake}}
"""


def _load(text: str):  # type: ignore[no-untyped-def]
    job, problems = validate_job_text(text, "job.yaml", check_connectivity=False)
    return job, [p.render("job.yaml") for p in problems if not p.warning]


@pytest.mark.parametrize("delimiter", ["_", "-", "::"])
def test_a_topic_delimiter_the_sink_cannot_read_is_refused_at_its_key(delimiter: str) -> None:
    job, problems = _load(_job(f"  topic.delimiter: '{delimiter}'\n"))
    assert job is None and len(problems) == 1, problems
    assert "source['topic.delimiter']" in problems[0] and "would never be applied" in problems[0]
    assert "Remove the key" in problems[0]


def test_the_default_delimiter_spelled_out_loads() -> None:
    job, problems = _load(_job("  topic.delimiter: '.'\n"))
    assert job is not None and not problems


@pytest.mark.parametrize("key", ["topic.heartbeat.prefix", "heartbeat.topics.prefix"])
def test_the_heartbeat_topic_is_the_one_the_connector_writes(key: str) -> None:
    job, problems = _load(_job(f"  {key}: beats\n  heartbeat.interval.ms: 500\n"))
    assert job is not None and not problems, problems
    connector = PostgresTopicNaming.from_config({"topic.prefix": "shop", key: "beats"})
    assert heartbeat_topic_name(job) == connector.heartbeat_topic() == "beats.shop"
    assert heartbeat_topic(job) == "beats.shop"
    plain, _ = _load(_job())
    assert plain is not None
    assert heartbeat_topic_name(plain) == PostgresTopicNaming("shop").heartbeat_topic() == "__debezium-heartbeat.shop"
    assert heartbeat_topic(plain) is None  # heartbeat.interval.ms is 0 by default: no watermark topic
