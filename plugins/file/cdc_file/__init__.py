"""File source and sink connectors: the example a plugin author copies. Imports only cdc.api."""

__version__ = "0.1.0"
