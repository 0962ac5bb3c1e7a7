"""Offset, status and config stores, in Kafka Connect's formats, over either transport."""
