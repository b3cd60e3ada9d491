"""AWS's own limits on a stream's settings, checked before anything is sent: a typo is one line and
exit 2, never a server round trip or a half-made change."""

from __future__ import annotations

from console.bounds import UPDATE_SHARD_COUNT_MAX, whole_number
from console.errors import BadInput

# The most shards kconsole creates or rescales to: UpdateShardCount's ceiling for one stream.
MAX_SHARDS = UPDATE_SHARD_COUNT_MAX
DEFAULT_SHARDS = 4
# IncreaseStreamRetentionPeriod / DecreaseStreamRetentionPeriod: 24 hours to 365 days.
MIN_RETENTION_HOURS = 24
MAX_RETENTION_HOURS = 8760
# KeyId of StartStreamEncryption: an alias ("alias/..."), a key id, or a key or alias ARN; 1 to 2048.
MAX_KMS_KEY_LENGTH = 2048
AWS_MANAGED_KMS_KEY = "alias/aws/kinesis"
MODES = ("PROVISIONED", "ON_DEMAND")


def parse_shard_count(text: object, *, option: str = "--shards") -> int:
    """A shard count for a stream to create (argparse `type=`), bounded before any work starts."""
    return whole_number(text, what=option, low=1, high=MAX_SHARDS)


def check_retention_hours(hours: object, *, option: str = "--hours") -> int:
    value = str(hours).strip()
    if (
        not (value.isascii() and value.isdigit())
        or len(value) > 6
        or not MIN_RETENTION_HOURS <= int(value) <= MAX_RETENTION_HOURS
    ):
        shown = value if len(value) <= 30 else value[:30] + "..."
        raise BadInput(
            f"{option} must be a whole number of hours from {MIN_RETENTION_HOURS} to "
            f"{MAX_RETENTION_HOURS} (365 days); got {shown!r}",
            code="bad_retention",
        )
    return int(value)


def check_kms_key(key: str, *, what: str = "--kms-key") -> str:
    key = (key or "").strip()
    if not 1 <= len(key) <= MAX_KMS_KEY_LENGTH or any(ch.isspace() or not ch.isprintable() for ch in key):
        raise BadInput(
            f"{what} must be a KMS key alias (alias/...), key id or ARN of 1 to 2048 characters without spaces",
            code="bad_kms_key",
        )
    return key


def parse_mode(text: str) -> str:
    mode = (text or "").strip().upper().replace("-", "_")
    if mode not in MODES:
        raise BadInput(f"capacity mode must be on-demand or provisioned; got {text!r}", code="usage")
    return mode
