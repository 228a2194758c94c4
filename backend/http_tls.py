"""The TLS settings the backend's HTTP clients share (to the LLM's server, its batch endpoints,
Label Studio's files)."""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def tls_context() -> ssl.SSLContext:
    """httpx's default TLS settings (certifi's certificate authorities, or ``SSL_CERT_FILE`` /
    ``SSL_CERT_DIR``), made once per process. httpx makes them again for every client, reading the
    authorities' bundle each time (40-50 ms of CPU, for an ``http://`` URL too)."""
    return httpx.create_ssl_context()
