"""kconsole: a terminal dashboard and operations console for Amazon Kinesis Data Streams."""

__version__ = "0.1.0"
