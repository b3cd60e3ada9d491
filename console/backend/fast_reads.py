"""The embedded server's short path for the calls a console makes most: GetShardIterator, GetRecords,
ListShards and DescribeStreamSummary.

moto answers every request through Flask, a per-request inspection of the handler class, its
query-string and form parsing, and a model-driven serializer; for these small read calls that costs
about 0.5 ms of the server's 1.1 ms per call, and ListShards of 10,000 shards takes seconds. This
WSGI layer runs the same moto handler methods (with moto_compat's fixes) on the same models, under the
same lock, and writes their result as JSON directly. Anything it does not handle exactly as moto would
(other calls, AT_TIMESTAMP parameters, any error) goes to moto's full path unchanged: these calls
change nothing, so answering an error from the start is safe.
"""

from __future__ import annotations

import base64
import calendar
import io
import json
import os
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

TARGET_PREFIX = "Kinesis_20131202."
SHORT_PATH_CALLS = {"GetShardIterator": "get_shard_iterator", "GetRecords": "get_records",
                    "ListShards": "list_shards", "DescribeStreamSummary": "describe_stream_summary"}
# Parameters whose values moto would convert from the wire (timestamps): those requests take the long path.
CONVERTED_PARAMETERS = ("Timestamp",)


class ShortPathReads:
    """WSGI middleware in front of moto's application (see module docstring)."""

    def __init__(self, app: Callable, lock: Any) -> None:
        from moto.core.responses import BaseResponse
        from moto.kinesis.responses import KinesisResponse

        self.app = app
        self.lock = lock
        self.response_class = KinesisResponse
        self.region_in_url = BaseResponse.region_regex
        self.region_in_user_agent = BaseResponse.region_from_useragent_regex
        self.access_key_in_authorization = BaseResponse.access_key_regex
        self.default_region = BaseResponse.default_region

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        method = SHORT_PATH_CALLS.get(target[len(TARGET_PREFIX):]) if target.startswith(TARGET_PREFIX) else None
        if method is None or environ.get("REQUEST_METHOD") != "POST":
            return self.app(environ, start_response)
        body = _read_body(environ)
        try:
            payload = self._answer(environ, method, body)
        except Exception:  # noqa: BLE001 - moto's own path makes the exact error response
            payload = None
        if payload is None:
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            return self.app(environ, start_response)
        start_response("200 OK", [("Content-Type", "application/x-amz-json-1.1"),
                                  ("Content-Length", str(len(payload))),
                                  ("x-amzn-RequestId", str(uuid.uuid4())),
                                  ("Server", "amazon.com")])
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
        handler.body = body.decode()
        handler.uri_match = {}
        handler.region = self._region(environ)
        handler.current_account = self._account(environ)
        with self.lock:
            result = getattr(handler, method)().result
            return json.dumps(_wire(result), separators=(",", ":")).encode()

    def _region(self, environ: dict) -> str:
        """As moto's BaseResponse.get_region_from_url: the URL, the User-Agent, the SigV4 scope."""
        url = f"{environ.get('wsgi.url_scheme', 'http')}://{environ.get('HTTP_HOST', '')}{environ.get('PATH_INFO', '')}"
        if match := self.region_in_url.search(url):
            return match.group(1)
        if match := self.region_in_user_agent.search(environ.get("HTTP_USER_AGENT", "")):
            return match.group(1)
        authorization = environ.get("HTTP_AUTHORIZATION", "")
        if "AWS4" in authorization:
            return authorization.split(",")[0].split("/")[2]
        return self.default_region

    def _account(self, environ: dict) -> str:
        """As moto's BaseResponse.get_current_account: MOTO_ACCOUNT_ID, the header, then the access key."""
        from moto.iam.models import get_account_id_from

        if "MOTO_ACCOUNT_ID" in os.environ:
            return os.environ["MOTO_ACCOUNT_ID"]
        if "HTTP_X_MOTO_ACCOUNT_ID" in environ:
            return environ["HTTP_X_MOTO_ACCOUNT_ID"]
        match = self.access_key_in_authorization.search(environ.get("HTTP_AUTHORIZATION", ""))
        return get_account_id_from(match.group(1) if match else "AKIAEXAMPLE")


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
