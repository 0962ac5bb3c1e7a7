"""Checking a job file: each concern in a module of its own, run in order by cdc/jobs/load.py.

`problems` (what a check reports, with its YAML path and line), `yaml_text` (reading the
file, lines, keys YAML would mangle, the bounds on aliases and nesting), `text_values` (NUL and
control characters), `providers` (${env:…}/${file:…} references), `schema`
(job.schema.json), `environment` (reachability, Kafka clients, state.dir, cluster masters),
`source` and `unknown_keys` (the connector's own ConfigDef, as Kafka Connect's
`PUT /connector-plugins/{type}/config/validate`), `sink`, `transforms` and `routes` (what the
Spark sink needs of the events and topics), `keys` (every applied table has a record key),
`position_loss` (how long the database keeps the position the stored offset needs).
"""
