"""Real servers for the tests: private MariaDB, PostgreSQL and Kafka-protocol brokers.

See the "Test rig" section of the design document. The fixtures themselves are
declared in tests/conftest.py; this package holds the machinery.
"""

from .kafka import KafkaBroker
from .mariadb import MariaDbServer
from .postgres import PostgresServer

__all__ = ["KafkaBroker", "MariaDbServer", "PostgresServer"]
