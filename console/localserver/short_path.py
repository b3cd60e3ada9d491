"""The embedded server's short path for the calls a console and a producer make most: GetShardIterator,
GetRecords, ListShards, DescribeStreamSummary and PutRecords.

moto answers every request through Flask, a per-request inspection of the handler class, its
query-string and form parsing, and a model-driven serializer; for these calls that costs about half
the server's time per call (a third of a 500-record PutRecords goes on serializing its answer), and
ListShards of 10,000 shards takes seconds. This WSGI layer runs the same moto handler methods (with
console.localserver.fixes) on the same models, under the same lock, and writes their result as JSON
directly. Anything it does not handle exactly as moto would (other calls, AT_TIMESTAMP parameters,
any error) goes to moto's full path unchanged. The reads change nothing, so answering an error from the
start is safe; PutRecords is checked whole first (records.checked_put_records), and only a
request refused there, before any record is stored, goes on to moto; once records are stored, the
answer comes from here, whatever happens, so no request is ever stored twice.
"""

from __future__ import annotations

import base64
import calendar
import io
import json
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from werkzeug.datastructures import EnvironHeaders

TARGET_PREFIX = "Kinesis_20131202."
SHORT_PATH_CALLS = {
    "GetShardIterator": "get_shard_iterator",
    "GetRecords": "get_records",
    "ListShards": "list_shards",
    "DescribeStreamSummary": "describe_stream_summary",
    "PutRecords": "put_records",
}
# Parameters whose values moto would convert from the wire (timestamps): those requests take the long path.
CONVERTED_PARAMETERS = ("Timestamp",)


class ShortPath:
    """WSGI middleware in front of moto's application (see module docstring)."""

    def __init__(self, app: Callable, lock: Any) -> None:
        from moto.kinesis.responses import KinesisResponse

        self.app = app
        self.lock = lock
        self.response_class = KinesisResponse

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        method = SHORT_PATH_CALLS.get(target[len(TARGET_PREFIX) :]) if target.startswith(TARGET_PREFIX) else None
        if method is None or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        body = _read_body(environ)
        try:
            payload = self._answer(environ, method, body)
        except StoredPartly as error:
            return _internal_failure(start_response, error)
        except Exception:  # moto's own path makes the exact error response
            payload = None
        if payload is None:
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            return self.app(environ, start_response)
        start_response(
            "200 OK",
            [
                ("Content-Type", "application/x-amz-json-1.1"),
                ("Content-Length", str(len(payload))),
                ("x-amzn-RequestId", str(uuid.uuid4())),
                ("Server", "amazon.com"),
            ],
        )
        return [payload]

    def _answer(self, environ: dict, method: str, body: bytes) -> bytes | None:
        params = json.loads(body or b"{}")
        if not isinstance(params, dict):
            return None
        shard_filter = params.get("ShardFilter")
        nested = shard_filter if isinstance(shard_filter, dict) else {}
        if any(name in params or name in nested for name in CONVERTED_PARAMETERS):
            return None
        handler = self.response_class()
        handler.querystring = {name: [value] for name, value in params.items()}
        # Every parameter is in the query string now; moto's _get_param parses the body again for each
        # one a request leaves out (StreamARN beside StreamName): a 5 MiB PutRecords parsed twice.
        handler.body = "{}"
        handler.uri_match = {}
        # Region and account exactly as moto finds them: its own methods, over this request's headers.
        handler.headers = EnvironHeaders(environ)
        url = f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '')}{environ.get('PATH_INFO', '')}"
        handler.region = handler.get_region_from_url(SimpleNamespace(headers=handler.headers), url)
        handler.current_account = handler.get_current_account()
        with self.lock:
            if method == "put_records":  # strings and a count: JSON as it is
                return json.dumps(_put_records(handler), separators=(",", ":")).encode()
            result = getattr(handler, method)().result
            return json.dumps(_wire(result), separators=(",", ":")).encode()


class StoredPartly(Exception):
    """Storing a checked PutRecords request failed midway: sending it on to moto would store it twice."""


def _put_records(handler: Any) -> dict[str, Any]:
    from console.localserver import records

    stream, checked, size = records.checked_put_records(handler)  # refused here: nothing stored, moto answers
    try:
        return records.store_records(handler.kinesis_backend, stream, checked, size)
    except Exception as error:
        raise StoredPartly(f"{type(error).__name__}: {error}") from error


def _internal_failure(start_response: Callable, error: Exception) -> list[bytes]:
    payload = json.dumps({"__type": "InternalFailure", "message": str(error)}).encode()
    start_response(
        "500 Internal Server Error",
        [
            ("Content-Type", "application/x-amz-json-1.1"),
            ("Content-Length", str(len(payload))),
            ("x-amzn-RequestId", str(uuid.uuid4())),
        ],
    )
    return [payload]


def _read_body(environ: dict) -> bytes:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    return environ["wsgi.input"].read(length) if length > 0 else b""


def _wire(value: Any) -> Any:
    """moto's JSON serializer for these shapes: blobs in base64, timestamps in epoch seconds to the
    millisecond, absent (None) members left out."""
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_wire(item) for item in value]
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if isinstance(value, datetime):
        seconds = calendar.timegm(value.timetuple())
        return seconds + (value.microsecond // 1000) / 1000.0 if value.microsecond else seconds
    return value
