"""Debezium's signals and incremental snapshots (io.debezium.pipeline.signal, ...snapshot.incremental).

Shared by the MySQL and PostgreSQL connectors: the signal record and its validation
(`record.py`), the `signal.*` settings (`config.py`), the `file` and `kafka` channels
(`channels.py`; the `source` channel is the connector's own stream), the actions
(`processor.py`), the DBLog incremental snapshot's state, window and offsets
(`incremental.py`) and its algorithm, Debezium's AbstractIncrementalSnapshotChangeEventSource
(`incremental_source.py`). The database-specific parts (chunk queries, watermark writes, where the
stream hands rows over) are each connector's subclass of it.
"""
