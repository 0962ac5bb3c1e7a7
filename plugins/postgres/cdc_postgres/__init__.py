"""PostgreSQL source: pgoutput decoding and replication-protocol streaming (psycopg 3)."""

__version__ = "0.1.0"
