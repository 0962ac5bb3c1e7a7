"""Helpers shared by end-to-end tests: building plugins, running `cdc` as a real process."""
