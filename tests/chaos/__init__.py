"""The chaos test: a seeded whole-pipeline fault test (issue 16). See harness.py."""
