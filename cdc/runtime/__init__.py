"""The Kafka Connect runtime: workers, task runners, herders and plugin discovery."""
