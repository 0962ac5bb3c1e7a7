"""Debezium's signals and incremental snapshots (io.debezium.pipeline.signal, ...snapshot.incremental).

Shared by the MySQL and PostgreSQL connectors: the signal record and its validation
(`record.py`), the `signal.*` settings (`config.py`), the `file` and `kafka` channels
(`channels.py`; the `source` channel is the connector's own stream), the actions
(`processor.py`) and the DBLog incremental snapshot's state, window and offsets
(`incremental.py`). The database-specific parts (chunk queries, watermark writes, where the
stream hands rows over) live in each connector.
"""
