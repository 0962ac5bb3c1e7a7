"""A test stand-in for an Iceberg REST catalog: the REST spec's routes over pyiceberg's SqlCatalog.

It is not a catalog server. It speaks the part of the Iceberg REST catalog spec that
pyiceberg's RestCatalog calls (`GET /v1/config`; namespaces: list, create, load, exists,
drop; tables: list, create, load, exists (`HEAD`), commit (`POST` with requirements and
updates), drop) and hands every request to a SqlCatalog in SQLite, whose commit checks the
requirements, so a request pyiceberg sends is answered as a catalog would answer it. No
credential vending, no views, no multi-level namespaces with `/`, no server-side scan planning:
what Polaris, Nessie or Lakekeeper add is left out. PyPI has no small REST catalog server that
runs offline (the real ones are Java or Rust services), hence this.

With `token`, every request must carry `Authorization: Bearer <token>`; a wrong one is refused
with 401 and a message that quotes the header it got, as chatty servers do, so a test can
check that the sink hides the secret it sent.

Serve it with `serving(root)`: uvicorn on a free 127.0.0.1 port on a thread of the test's
process (a listening socket: the tests using it are not unit tests, tests/tiers.py).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import uvicorn
from pyiceberg.catalog import Catalog
from pyiceberg.catalog.rest import CreateTableRequest, TableResponse
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table import CommitTableRequest, Table
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

_START_TIMEOUT_S = 10
_SEPARATOR = "\x1f"  # pyiceberg's separator of a namespace's levels in a path (namespace-separator)
# The spec's error type and HTTP status of each catalog error (ErrorModel: message, type, code).
_ERRORS: dict[type[Exception], tuple[str, int]] = {
    NoSuchNamespaceError: ("NoSuchNamespaceException", 404),
    NoSuchTableError: ("NoSuchTableException", 404),
    NamespaceAlreadyExistsError: ("AlreadyExistsException", 409),
    TableAlreadyExistsError: ("AlreadyExistsException", 409),
    NamespaceNotEmptyError: ("NamespaceNotEmptyException", 409),
    CommitFailedException: ("CommitFailedException", 409),
}
_ROUTES = (  # (method, path after /v1/): what GET /v1/config announces
    ("GET", "namespaces"),
    ("POST", "namespaces"),
    ("GET", "namespaces/{namespace}"),
    ("HEAD", "namespaces/{namespace}"),
    ("DELETE", "namespaces/{namespace}"),
    ("GET", "namespaces/{namespace}/tables"),
    ("POST", "namespaces/{namespace}/tables"),
    ("GET", "namespaces/{namespace}/tables/{table}"),
    ("HEAD", "namespaces/{namespace}/tables/{table}"),
    ("POST", "namespaces/{namespace}/tables/{table}"),
    ("DELETE", "namespaces/{namespace}/tables/{table}"),
)


def _error(message: str, kind: str, code: int) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": kind, "code": code}}, status_code=code)


def _namespace(request: Request) -> tuple[str, ...]:
    return tuple(unquote(request.path_params["namespace"]).split(_SEPARATOR))


def _identifier(request: Request) -> tuple[str, ...]:
    return (*_namespace(request), unquote(request.path_params["table"]))


def _table_response(table: Table) -> Response:
    body = TableResponse(metadata_location=table.metadata_location, metadata=table.metadata, config={})
    return Response(body.model_dump_json(), media_type="application/json")


class RestCatalogApp:
    """The routes, over one SqlCatalog; one request at a time (SQLite and the commit's
    read-check-write are not meant for concurrent writers in one process)."""

    def __init__(self, catalog: Catalog, token: str | None = None) -> None:
        self.catalog = catalog
        self.token = token
        self.namespaces_fixed = False  # True: creating a namespace is forbidden (403), as a locked-down catalog does
        self._lock = threading.Lock()
        self.requests: list[tuple[str, str]] = []  # (method, path) of every request, for assertions
        handlers: dict[tuple[str, str], Callable[[Request, bytes], Response]] = {
            ("GET", "namespaces"): self._list_namespaces,
            ("POST", "namespaces"): self._create_namespace,
            ("GET", "namespaces/{namespace}"): self._load_namespace,
            ("HEAD", "namespaces/{namespace}"): self._namespace_exists,
            ("DELETE", "namespaces/{namespace}"): self._drop_namespace,
            ("GET", "namespaces/{namespace}/tables"): self._list_tables,
            ("POST", "namespaces/{namespace}/tables"): self._create_table,
            ("GET", "namespaces/{namespace}/tables/{table}"): self._load_table,
            ("HEAD", "namespaces/{namespace}/tables/{table}"): self._table_exists,
            ("POST", "namespaces/{namespace}/tables/{table}"): self._commit_table,
            ("DELETE", "namespaces/{namespace}/tables/{table}"): self._drop_table,
        }
        routes = [Route("/v1/config", self._wrap(self._config), methods=["GET"])]
        for (method, path), handler in handlers.items():
            routes.append(Route(f"/v1/{path}", self._wrap(handler), methods=[method]))
        self.app = Starlette(routes=routes)

    def _wrap(self, handler: Callable[[Request, bytes], Response]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            body = await request.body()
            self.requests.append((request.method, request.url.path))
            if self.token is not None:
                got = request.headers.get("authorization", "")
                if got != f"Bearer {self.token}":
                    return _error(f"not authorized: {got or 'no Authorization header'}", "NotAuthorizedException", 401)
            with self._lock:
                try:
                    return handler(request, body)
                except tuple(_ERRORS) as e:
                    kind, code = next(v for cls, v in _ERRORS.items() if isinstance(e, cls))
                    return _error(str(e), kind, code)
                except Exception as e:  # a request this stand-in does not understand: the test sees why
                    return _error(f"{type(e).__name__}: {e}", "ServerError", 500)

        return endpoint

    def _config(self, request: Request, body: bytes) -> Response:
        endpoints = [f"{method} /v1/{{prefix}}/{path}" for method, path in _ROUTES]
        return JSONResponse({"defaults": {}, "overrides": {}, "endpoints": endpoints})

    def _list_namespaces(self, request: Request, body: bytes) -> Response:
        return JSONResponse({"namespaces": [list(ns) for ns in self.catalog.list_namespaces()]})

    def _create_namespace(self, request: Request, body: bytes) -> Response:
        if self.namespaces_fixed:
            return _error("this principal may not create namespaces", "ForbiddenException", 403)
        payload = json.loads(body)
        namespace = tuple(payload["namespace"])
        self.catalog.create_namespace(namespace, payload.get("properties") or {})
        return JSONResponse({"namespace": list(namespace), "properties": payload.get("properties") or {}})

    def _load_namespace(self, request: Request, body: bytes) -> Response:
        namespace = _namespace(request)
        properties = self.catalog.load_namespace_properties(namespace)
        return JSONResponse({"namespace": list(namespace), "properties": dict(properties)})

    def _namespace_exists(self, request: Request, body: bytes) -> Response:
        return Response(status_code=204 if self.catalog.namespace_exists(_namespace(request)) else 404)

    def _drop_namespace(self, request: Request, body: bytes) -> Response:
        self.catalog.drop_namespace(_namespace(request))
        return Response(status_code=204)

    def _list_tables(self, request: Request, body: bytes) -> Response:
        tables = self.catalog.list_tables(_namespace(request))
        return JSONResponse({"identifiers": [{"namespace": list(t[:-1]), "name": t[-1]} for t in tables]})

    def _create_table(self, request: Request, body: bytes) -> Response:
        # pyiceberg leaves out the optional fields it has no value for (exclude_none) but reads them as required.
        optional = {"location": None, "partition-spec": None, "write-order": None}
        create = CreateTableRequest.model_validate({**optional, **json.loads(body)})
        extra: dict[str, Any] = {}
        if create.partition_spec is not None:  # the sink's bucketed tables (iceberg_layout.py)
            extra["partition_spec"] = create.partition_spec
        if create.write_order is not None:
            extra["sort_order"] = create.write_order
        table = self.catalog.create_table(
            (*_namespace(request), create.name),
            schema=create.table_schema,
            location=create.location,
            properties=create.properties,
            **extra,
        )
        return _table_response(table)

    def _load_table(self, request: Request, body: bytes) -> Response:
        return _table_response(self.catalog.load_table(_identifier(request)))

    def _table_exists(self, request: Request, body: bytes) -> Response:
        return Response(status_code=204 if self.catalog.table_exists(_identifier(request)) else 404)

    def _commit_table(self, request: Request, body: bytes) -> Response:
        commit = CommitTableRequest.model_validate_json(body)
        table = self.catalog.load_table(_identifier(request))
        response = self.catalog.commit_table(table, commit.requirements, commit.updates)
        return Response(response.model_dump_json(), media_type="application/json")

    def _drop_table(self, request: Request, body: bytes) -> Response:
        self.catalog.drop_table(_identifier(request))
        return Response(status_code=204)


class RestCatalogServer:
    """A running stand-in: `uri` for a RestCatalog, `backing` for the SqlCatalog behind it."""

    def __init__(self, root: Path, token: str | None = None) -> None:
        (root / "warehouse").mkdir(parents=True, exist_ok=True)
        self.backing = SqlCatalog(
            "rest-backing", uri=f"sqlite:///{root}/backing.db", warehouse=f"file://{root}/warehouse"
        )
        self.routes = RestCatalogApp(self.backing, token)
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self._socket.listen(64)
        self.uri = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        config = uvicorn.Config(self.routes.app, log_level="warning", access_log=False, lifespan="off", log_config=None)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="iceberg-rest-catalog", daemon=True)
        self._failure: list[BaseException] = []

    def _run(self) -> None:
        try:
            asyncio.run(self._server.serve(sockets=[self._socket]))
        except BaseException as e:  # reported by start(), not lost in the thread
            self._failure.append(e)

    def start(self) -> None:
        self._thread.start()
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the Iceberg REST catalog stand-in did not start: {self._failure or 'timeout'}")
            time.sleep(0.02)

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(10)
        self._socket.close()
        self.backing.close()


@contextmanager
def serving(root: Path, token: str | None = None) -> Iterator[RestCatalogServer]:
    """The stand-in serving a SqlCatalog under `root` until the block ends."""
    server = RestCatalogServer(root, token)
    server.start()
    try:
        yield server
    finally:
        server.stop()
