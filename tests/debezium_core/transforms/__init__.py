"""Debezium SMT tests (issue 23)."""
