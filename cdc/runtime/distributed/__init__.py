"""Distributed mode: workers sharing `group.id` split connectors and tasks over Kafka."""
