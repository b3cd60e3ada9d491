"""aiohttp imported with its default contexts' CA certificates put off until one is used."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = """
import asyncio, json, ssl
from console.backend.deferred_tls import import_aiohttp

import_aiohttp()
import aiohttp
import aiohttp.connector as connector

before = connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"]
plain = ssl.create_default_context()  # outside the import: loads its certificates as always


async def https_attempt():
    async with aiohttp.ClientSession() as session:
        try:
            await session.get("https://127.0.0.1:9/")  # nothing listens: the context is chosen, then refused
        except aiohttp.ClientError:
            pass


asyncio.run(https_attempt())
print(json.dumps({
    "before": before,
    "after": connector._SSL_CONTEXT_VERIFIED.cert_store_stats()["x509_ca"],
    "expected": plain.cert_store_stats()["x509_ca"],
    "verify_mode": int(connector._SSL_CONTEXT_VERIFIED.verify_mode),
    "check_hostname": connector._SSL_CONTEXT_VERIFIED.check_hostname,
    "restored": "set_default_verify_paths" not in vars(ssl.SSLContext),
}))
"""


def test_the_default_contexts_load_their_certificates_when_first_chosen_for_https():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["restored"]
    assert seen["before"] == 0
    assert seen["after"] == seen["expected"]
    assert seen["verify_mode"] == 2 and seen["check_hostname"]  # CERT_REQUIRED, as aiohttp makes it
