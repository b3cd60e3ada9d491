"""Which backend to open, from the command line and the AWS environment, checked before any call.

`BackendConfig.from_args(args)` follows the AWS CLI: --local wins, then --endpoint-url, then an endpoint
configured the botocore way (AWS_ENDPOINT_URL_KINESIS, AWS_ENDPOINT_URL, the profile), else real AWS
through the standard credential chain. Every value a user gives (region, endpoint, timeouts, retry
settings) is validated here and a mistake is one BadInput line, never a botocore traceback later.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from console.backend.errors import translate
from console.errors import BadInput

BackendKind = Literal["aws", "endpoint", "local"]

DEFAULT_LOCAL_REGION = "us-east-1"
DUMMY_CREDENTIALS = ("kconsole-local", "kconsole-local")  # local servers check the signature's shape only

# AWS region names: two letters, one or more words, a number (us-east-1, us-gov-west-1, ap-southeast-5).
_AWS_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d{1,2}$")
# Anything botocore will put in a host name, for local servers that accept any region.
_HOST_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")

MAX_REQUEST_TIMEOUT = 300.0
RETRY_MODES = ("legacy", "standard", "adaptive")
MAX_ATTEMPTS_LIMIT = 100  # AWS_MAX_ATTEMPTS beyond this is a typo, not a retry policy
MAX_TIMEOUT_SECONDS = 3600.0
DEFAULT_CONNECT_TIMEOUT = 3.0
DEFAULT_READ_TIMEOUT = 20.0
DEFAULT_MAX_ATTEMPTS = 7  # one call and six retries of throttling or a server hiccup
# Hosts whose endpoint is a server on this machine: they get dummy credentials, never the user's.
_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1", "0.0.0.0"})


class _AwsSettings:
    """What botocore reads from the environment and ~/.aws/config for one profile, read once."""

    def __init__(self, profile: str | None) -> None:
        from console.backend.heap import loading

        with loading():
            import botocore.session

            self.profile = profile
            self._session = botocore.session.Session(profile=profile)

    def get(self, name: str) -> Any:
        from botocore.exceptions import BotoCoreError, ProfileNotFound

        try:
            return self._session.get_config_variable(name)
        except ProfileNotFound:
            raise BadInput(
                f"AWS profile not found: {profile_name(self.profile)!r} (see ~/.aws/config)", code="bad_profile"
            ) from None
        except BotoCoreError as error:  # an unparsable ~/.aws/config, say
            translated = translate(error, operation="configure", where="AWS", endpoint_url=None)
            if translated is None:
                raise
            raise translated from None

    def region(self) -> str | None:
        """The region botocore would use: AWS_REGION / AWS_DEFAULT_REGION, then the profile's config."""
        for variable in ("AWS_REGION", "AWS_DEFAULT_REGION"):
            if os.environ.get(variable):
                return os.environ[variable]
        region: str | None = self.get("region")
        return region

    def configured_endpoint(self) -> tuple[str, str] | None:
        """(URL, where it was set) in botocore's order: AWS_ENDPOINT_URL_KINESIS, AWS_ENDPOINT_URL, the
        profile's `services` section, the profile's endpoint_url; none when
        AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is true. Resolved here (botocore would connect to it
        anyway) so the header and errors name the endpoint in use, and where it came from."""
        if self.get("ignore_configured_endpoint_urls"):
            return None
        for variable in ("AWS_ENDPOINT_URL_KINESIS", "AWS_ENDPOINT_URL"):
            if os.environ.get(variable):
                return os.environ[variable], variable
        scoped = self.scoped_config()
        where = f"profile {profile_name(self.profile) or 'default'}"
        services = scoped.get("services")
        if services:
            section = self._session.full_config.get("services", {}).get(services, {})
            if (section.get("kinesis") or {}).get("endpoint_url"):
                return section["kinesis"]["endpoint_url"], f"{where}, services {services}"
        if scoped.get("endpoint_url"):
            return scoped["endpoint_url"], where
        return None

    def scoped_config(self) -> dict[str, Any]:
        from botocore.exceptions import ProfileNotFound

        try:
            scoped: dict[str, Any] = self._session.get_scoped_config()
            return scoped
        except ProfileNotFound:
            raise BadInput(
                f"AWS profile not found: {profile_name(self.profile)!r} (see ~/.aws/config)", code="bad_profile"
            ) from None


def profile_name(given: str | None) -> str | None:
    """The profile botocore uses: --profile, else AWS_PROFILE, else AWS_DEFAULT_PROFILE."""
    return given or os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or None


def is_local_endpoint(url: str | None) -> bool:
    return bool(url) and (urlsplit(url).hostname or "") in _LOCAL_HOSTS


def validate_region(region: str, *, kind: str) -> str:
    pattern = _AWS_REGION if kind == "aws" else _HOST_LABEL
    if not isinstance(region, str) or not pattern.match(region):
        example = "e.g. us-east-1, eu-west-1"
        raise BadInput(f"not a valid AWS region: {region!r} ({example})", code="bad_region")
    return region


def check_embedded_region(region: str) -> None:
    """The embedded server (moto) serves the regions botocore knows for Kinesis, in every partition; any
    other would be a server error on every call, retried for seconds: refused here in one line."""
    import botocore.session

    session = botocore.session.get_session()
    known = {
        name
        for partition in session.get_available_partitions()
        for name in session.get_available_regions("kinesis", partition_name=partition)
    }
    if region not in known:
        raise BadInput(
            f"the embedded server has no region {region!r}: it serves AWS's Kinesis regions "
            f"(e.g. {DEFAULT_LOCAL_REGION}, eu-west-1)",
            code="bad_region",
        )


# user:password@ before the host, with or without a scheme.
_USERINFO = re.compile(r"^((?:[A-Za-z][A-Za-z0-9+.-]*://)?)[^/?#\s]*@")


def without_userinfo(url: str) -> str:
    """`url` without any user:password@: Kinesis requests are signed with AWS credentials (aiohttp
    refuses credentials in a URL besides), and a password must never reach an error, a header or JSON."""
    return _USERINFO.sub(r"\1", url, count=1)


def validate_endpoint_url(url: str) -> str:
    """An http(s) URL with a host and, if given, a port from 1 to 65535, returned without any
    user:password@; BadInput otherwise (botocore would fail later with a bare ValueError traceback on a
    port out of range or a broken IPv6 host). Only the URL without credentials is ever shown."""
    url = without_userinfo(url)
    problem = None
    if not re.match(r"^https?://[^/\s]+", url):
        problem = "must be an http:// or https:// URL"
    else:
        try:
            parts = urlsplit(url)
            port = parts.port
            if not parts.hostname:
                problem = "has no host name"
            elif port is not None and not 1 <= port <= 65535:
                problem = "has a port outside 1..65535"
        except ValueError as error:  # "Port out of range 0-65535", "Invalid IPv6 URL", a non-numeric port
            problem = f"is not a valid URL ({error})"
    if problem:
        raise BadInput(f"--endpoint-url {problem}; got {url!r}", code="usage")
    return url


def check_backend_options(args: Any) -> None:
    """The backend options make sense together: --local or --endpoint-url, not both, and a usable URL.
    Every command checks this at parse time, even one that stays offline, so a mistake is never ignored."""
    endpoint_url = getattr(args, "endpoint_url", None)
    if getattr(args, "local", False) and endpoint_url is not None:
        raise BadInput("--local and --endpoint-url cannot be used together", code="usage")
    if endpoint_url is not None:
        validate_endpoint_url(endpoint_url)


def validate_request_timeout(seconds: Any) -> float:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= MAX_REQUEST_TIMEOUT:
        raise BadInput(
            f"--request-timeout must be more than 0 and at most {MAX_REQUEST_TIMEOUT:g} seconds; got {seconds!r}",
            code="usage",
        )
    return float(seconds)


def validate_timeout(value: Any, option: str) -> float:
    """Seconds from 0 to an hour, as the AWS CLI takes them; 0 means no timeout (aiohttp, under
    aiobotocore, waits without limit on 0, where None would get botocore's default)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_TIMEOUT_SECONDS:
        raise BadInput(
            f"{option} must be from 0 (no timeout) to {MAX_TIMEOUT_SECONDS:g} seconds; got {value!r}", code="usage"
        )
    return float(value)


@dataclass(frozen=True)
class BackendConfig:
    kind: BackendKind = "aws"
    region: str | None = None
    profile: str | None = None
    endpoint_url: str | None = None
    # Where endpoint_url came from when not --endpoint-url: AWS_ENDPOINT_URL_KINESIS, a profile, ...
    endpoint_source: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    retry_mode: str = "standard"

    @classmethod
    def from_args(cls, args: Any) -> BackendConfig:
        """--local wins the kind, then --endpoint-url, then an endpoint configured the botocore way
        (see _AwsSettings.configured_endpoint), else real AWS; the region comes from --region, the AWS
        environment or the profile, and defaults to us-east-1 for local and endpoint backends. Retries
        follow AWS_MAX_ATTEMPTS / AWS_RETRY_MODE (or the profile's), timeouts --cli-*-timeout."""
        local = bool(getattr(args, "local", False))
        endpoint_url = getattr(args, "endpoint_url", None)
        profile = getattr(args, "profile", None)
        check_backend_options(args)
        if endpoint_url:
            endpoint_url = validate_endpoint_url(endpoint_url)  # user:password@ dropped, never printed
        source = None
        timeouts = {
            field: validate_timeout(getattr(args, option.replace("-", "_")[2:]), option)
            for field, option in (("connect_timeout", "--cli-connect-timeout"), ("read_timeout", "--cli-read-timeout"))
            if getattr(args, option.replace("-", "_")[2:], None) is not None
        }
        request_timeout = getattr(args, "request_timeout", None)
        if request_timeout is not None:
            if "read_timeout" in timeouts and timeouts["read_timeout"] != request_timeout:
                raise BadInput("--request-timeout and --cli-read-timeout are the same setting; give one", code="usage")
            timeouts["read_timeout"] = validate_request_timeout(request_timeout)
        read_timeout = timeouts.get("read_timeout", DEFAULT_READ_TIMEOUT)
        if "connect_timeout" not in timeouts and read_timeout:
            timeouts["connect_timeout"] = min(DEFAULT_CONNECT_TIMEOUT, read_timeout)
        settings = _AwsSettings(profile)
        if not local and not endpoint_url:
            configured = settings.configured_endpoint()
            if configured:
                endpoint_url, source = configured
                endpoint_url = _validate_configured_endpoint(endpoint_url, source)
        kind: BackendKind = "local" if local else "endpoint" if endpoint_url else "aws"
        region = getattr(args, "region", None)
        if region is None and kind != "local":
            region = settings.region()
        if region is None:
            if kind == "aws":
                raise BadInput(
                    "no AWS region configured: pass --region, set AWS_REGION, or set one in the profile",
                    code="bad_region",
                )
            region = DEFAULT_LOCAL_REGION
        validate_region(region, kind=kind)
        if kind == "local" and region != DEFAULT_LOCAL_REGION:
            check_embedded_region(region)
        retry_mode, max_attempts = _retry_settings(settings)
        return cls(
            kind=kind,
            region=region,
            profile=profile,
            endpoint_url=endpoint_url if kind == "endpoint" else None,
            endpoint_source=source,
            max_attempts=max_attempts,
            retry_mode=retry_mode,
            **timeouts,
        )

    @property
    def label(self) -> str:
        """Short header text: 'AWS eu-west-1 (profile prod)', 'local (embedded)', 'endpoint http://...',
        'endpoint http://... (AWS_ENDPOINT_URL)'."""
        if self.kind == "local":
            return "local (embedded)"
        if self.kind == "endpoint":
            return f"endpoint {self.endpoint_url}" + (f" ({self.endpoint_source})" if self.endpoint_source else "")
        profile = f" (profile {self.profile})" if self.profile else ""
        return f"AWS {self.region or '?'}{profile}"

    @property
    def local_endpoint(self) -> bool:
        """A server on this machine: given dummy credentials when the chain has none, as --endpoint-url is."""
        return self.kind == "endpoint" and (self.endpoint_source is None or is_local_endpoint(self.endpoint_url))


def _validate_configured_endpoint(url: str, source: str) -> str:
    try:
        return validate_endpoint_url(url)
    except BadInput as error:
        raise BadInput(
            str(error).replace("--endpoint-url", f"the endpoint URL from {source}"), code="bad_endpoint"
        ) from None


def _retry_settings(settings: _AwsSettings) -> tuple[str, int]:
    """AWS_RETRY_MODE and AWS_MAX_ATTEMPTS (or retry_mode / max_attempts in the profile), checked.
    Read as given, not through botocore's defaults: unset means kconsole's own (standard, 7)."""
    profile = settings.scoped_config()
    mode = os.environ.get("AWS_RETRY_MODE") or profile.get("retry_mode") or "standard"
    if mode not in RETRY_MODES:
        raise BadInput(
            f"AWS_RETRY_MODE (or the profile's retry_mode) must be one of {', '.join(RETRY_MODES)}; got {mode!r}",
            code="bad_aws_config",
        )
    given = os.environ.get("AWS_MAX_ATTEMPTS") or profile.get("max_attempts")
    if given is None:
        return mode, DEFAULT_MAX_ATTEMPTS
    try:
        attempts = int(str(given).strip())
    except ValueError:
        attempts = 0
    if not 1 <= attempts <= MAX_ATTEMPTS_LIMIT:
        raise BadInput(
            f"AWS_MAX_ATTEMPTS (or the profile's max_attempts) must be a whole number from 1 to "
            f"{MAX_ATTEMPTS_LIMIT}; got {given!r}",
            code="bad_aws_config",
        )
    return mode, attempts
