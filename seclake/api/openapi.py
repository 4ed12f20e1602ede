"""The OpenAPI 3.1 document of every call, made from the models each call
registers (``api/request.py``, ``api/reply.py``).

Served at ``/api/openapi.json`` and drawn by the web interface's reference
page (``/reference``). ``tests/api/test_openapi.py`` checks that it is valid
OpenAPI 3.1 and that the answers of a real server fit the reply models.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

import seclake.api.calls  # noqa: F401  (registers every call)
from seclake.api.registry import REGISTRY


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every call."""
    schemas: dict[str, Any] = {}

    def ref(model: Any) -> dict[str, Any]:
        schema = TypeAdapter(model).json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        return schema

    error = {"type": "object", "required": ["verdict"], "properties": {
        "verdict": {"enum": ["ERROR", "EXCEPTION"], "description": "ERROR: the call was refused; EXCEPTION: a fault."},
        "error": {"type": "string", "description": "What was wrong and where (the field and what to send)."},
        "exception": {"type": "string", "description": "An unexpected fault's message; the trace is in the server's log."}}}
    status_header = {"X-Seclake-Status": {
        "description": "The HTTP status an error stands for (errors are sent with 200 unless http_error_status).",
        "schema": {"type": "integer"}}}
    paths: dict[str, Any] = {}
    for name, call in sorted(REGISTRY.calls.items()):
        body = {"type": "object", "required": ["kargs"], "properties": {"kargs": ref(call.request)}}
        ok = {"type": "object", "required": ["verdict", "response"],
              "properties": {"verdict": {"const": "OK"}, "response": ref(call.reply)}}
        paths[f"/api/{name}"] = {"post": {
            "operationId": name.replace("/", "_"),
            "summary": call.summary,
            "tags": [name.split("/")[0]],
            "requestBody": {"required": True, "content": {"application/json": {"schema": body}}},
            "responses": {"200": {
                "description": "verdict OK with the response, or verdict ERROR/EXCEPTION with the message",
                "headers": status_header,
                "content": {"application/json": {"schema": {"oneOf": [ok, error]}}},
            }},
            "security": [] if call.permission == "public" else [{"servicetoken": []}, {"bearer": []}],
        }}
    for route in REGISTRY.raw_routes:
        paths[f"/api/{route.pattern}"] = {"post": {
            "operationId": "import",
            "summary": route.summary,
            "tags": ["import"],
            "parameters": [
                {"name": "vendor", "in": "path", "required": True, "schema": {"type": "string"},
                 "description": "The source the records are stored under (@source, @tags), like fortigate."},
                {"name": "type", "in": "query", "schema": {"enum": ["event", "flow"]},
                 "description": "The dataset; event when not given."},
                {"name": "format", "in": "query", "schema": {"enum": ["auto", "jsonl", "syslog", "cef", "kv"]},
                 "description": "How the lines are parsed; auto tells each line by its shape."},
                {"name": "customer", "in": "query", "schema": {"type": "string"},
                 "description": "The customer the records are filed under (@customer), over one a record names."},
                {"name": "Idempotency-Key", "in": "header", "schema": {"type": "string"},
                 "description": "Stores the import at most once: a retry with the same key gets the first reply."},
            ],
            "requestBody": {"required": True,
                            "description": "lines of text in UTF-8, or in the charset the Content-Type names "
                                           "(text/plain; charset=ISO-8859-1); gzip by Content-Encoding or its magic bytes",
                            "content": {"text/plain": {"schema": {"type": "string"}},
                                        "application/gzip": {"schema": {"type": "string"}}}},
            "responses": {"200": {
                "description": "the import's report, or an ERROR",
                "headers": status_header,
                "content": {"application/json": {"schema": {"oneOf": [
                    {"type": "object", "properties": {"verdict": {"const": "OK"}, "response": ref(route.reply)}}, error]}}},
            }},
            "security": [{"servicetoken": []}, {"bearer": []}],
        }}
    return {
        "openapi": "3.1.0",
        "info": {"title": "seclake", "version": "1", "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
                 "description": "Every call is a POST of {kargs} answered {verdict, response}."},
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "servicetoken": {"type": "apiKey", "in": "header", "name": "Servicetoken"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
    }
