"""Debezium building blocks shared by the cdc source connectors (MySQL/MariaDB and PostgreSQL).

Only `cdc.api` and the standard library are imported here, so every connector plugin can
depend on this package without reaching into the runtime.
"""

__version__ = "0.1.0"
