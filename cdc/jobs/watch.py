"""What a `cdc run` offers to watch it: its Prometheus metrics on the job's `metrics.port`
(the worker's Debezium and Kafka Connect metrics and the sink's per-table `cdc_sink_*`, one
exposition) and, on a terminal, the live per-table view (cdc.jobs.live_view)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client.registry import Collector

from cdc.jobs.sink_metrics import SinkCollector
from cdc.jobs.spec import JobSpec
from cdc.jobs.topics import topic_prefix
from cdc.runtime.prometheus.server import MetricsServer, start_metrics_server
from cdc.runtime.worker_config import WorkerConfig


class Watch:
    def __init__(self, server: MetricsServer | None, view: Any) -> None:
        self.server = server
        self.view = view

    @classmethod
    def start(
        cls,
        job: JobSpec,
        config: WorkerConfig,
        herder: Any,
        sink: Mapping[str, Any],
        *,
        view: bool | None = None,
        collectors: tuple[Collector, ...] = (),
    ) -> Watch:
        """`sink`: the sink's config (cdc.jobs.sink_config); `view`: draw the live view (default:
        when stderr is a terminal); `collectors`: more metrics for `metrics.port` (the scheduled verify's)."""
        from cdc.jobs.live_view import LiveView, on_terminal
        from cdc_spark.apply import SinkConfig
        from cdc_spark.apply.metrics import process_metrics

        figures = process_metrics()
        server = start_metrics_server(config, herder, SinkCollector(figures, str(sink.get("target"))), *collectors)
        if not (on_terminal() if view is None else view):
            return cls(server, None)
        naming = SinkConfig.parse(sink)
        prefix = topic_prefix(job)
        live = LiveView(
            f"cdc run {job.name}",
            herder,
            lambda table: naming.table_for(f"{prefix}.{table}"),
            figures,
            tuple(t.source for t in job.tables),
        )
        try:
            live.start()
        except Exception:
            if server is not None:
                server.stop()
            raise
        return cls(server, live)

    def stop(self) -> None:
        if self.view is not None:
            self.view.stop()
            self.view = None
        if self.server is not None:
            self.server.stop()
            self.server = None
