"""judgelab's HTTP clients share one TLS context per process (httpx would read the certificate
authorities' bundle again for every client: 40-50 ms of CPU each), and sharing it changes nothing
about what they trust: a server whose certificate no authority signed is refused by the sync's
clients and the backend's, and accepted once ``SSL_CERT_FILE`` names it, as with httpx's defaults."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import ssl
import subprocess
import sys

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from test_http_retry import Flaky  # answers 200 with a JSON object

from judgelab.backend.http_tls import tls_context as backend_tls_context
from judgelab.backend.llm.client import ChatClient
from judgelab.backend.settings import LLMSettings
from judgelab.sync.backend_client import BackendClient
from judgelab.sync.client import SyncError
from judgelab.sync.http_retry import tls_context
from judgelab.sync.local_stack import healthy
from judgelab.sync.ls_api import LabelStudioAPI


def self_signed(folder) -> tuple[str, str]:
    """A certificate for 127.0.0.1 that signs itself (no authority knows it): its and its key's files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_file), str(key_file)


@pytest.fixture(scope="module")
def https_server(tmp_path_factory):
    """An HTTPS server on 127.0.0.1 answering every GET and POST with 200 and a JSON object."""
    cert_file, key_file = self_signed(tmp_path_factory.mktemp("tls"))
    with Flaky(0, tls=(cert_file, key_file)) as server:
        yield server.url, cert_file


def test_the_shared_context_verifies_certificates_and_host_names():
    for context in (tls_context(), backend_tls_context()):
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert tls_context() is tls_context()  # made once


def test_a_certificate_no_authority_signed_is_refused(https_server, monkeypatch):
    monkeypatch.setenv("JUDGELAB_HTTP_RETRY_PAUSE", "0.01")
    url, _ = https_server
    assert healthy(url) is False  # the /health poll of the local stack
    api = LabelStudioAPI(url, "a-token")
    with pytest.raises((SyncError, httpx.ConnectError), match="CERTIFICATE_VERIFY_FAILED"):
        api.get_json("api/projects/1")
    api.close()
    with BackendClient(url, attempts=1) as backend:
        assert backend.health() is False

    async def ask_the_llm():
        settings = LLMSettings(base_url=url, api_key="k", model="m", timeout=5)
        async with ChatClient(settings) as client:
            await client._http.post(client.url, json={})

    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        asyncio.run(ask_the_llm())


def test_ssl_cert_file_is_honoured(https_server):
    """In a process of its own: the context is made once, at the first client."""
    url, cert_file = https_server
    script = "import sys; from judgelab.sync.local_stack import healthy; print(healthy(sys.argv[1]))"
    env = {"SSL_CERT_FILE": cert_file, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", script, url], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True", out.stderr
