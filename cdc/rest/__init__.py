"""Kafka Connect-compatible REST API served by `cdc standalone` and `cdc worker`."""
