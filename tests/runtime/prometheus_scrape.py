"""Scraping a worker's /metrics in tests: parsed with prometheus_client's own text parser."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def scrape(http: httpx.Client, path: str = "/metrics") -> tuple[str, Samples]:
    response = http.get(path)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    return response.text, parse(response.text)


def value(samples: Samples, metric: str, /, **labels: str) -> float | None:
    return samples.get((metric, frozenset(labels.items())))


def names(samples: Samples) -> set[str]:
    return {name for name, _ in samples}


def scrape_until(
    http: httpx.Client, cond: Callable[[Samples], Any], what: str, timeout: float = 60, path: str = "/metrics"
) -> tuple[str, Samples]:
    deadline = time.monotonic() + timeout
    text, samples = scrape(http, path)
    while not cond(samples):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}; last scrape:\n{text}")
        time.sleep(0.2)
        text, samples = scrape(http, path)
    return text, samples
