"""TLS endpoints of the real binary: one tcp:// and one ssl:// endpoint at once, with a
certificate authority and server certificate generated here (the server's keyfile holds the
certificate chain and the private key, as ArangoDB's server.pem). python-arango over https,
curl over HTTP/2 chosen by ALPN, and clients speaking the wrong protocol, which are refused
without hurting the server. Startup errors for a bad --ssl.protocol or a missing keyfile.
`/_admin/server/tls`: the keyfile summary, and a reload that swaps the certificate new
handshakes see."""
import datetime
import hashlib
import ipaddress
import json
import time
import re
import socket
import ssl
import subprocess
import warnings

import pytest
import jwt
import requests
from arango import ArangoClient
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from conftest import ROOT, Server, quiver_bin, unique


def _name(common_name):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def write_certificates(directory):
    """A CA and a server certificate it signs for 127.0.0.1 and localhost; returns the paths
    of the server keyfile (server certificate, CA certificate, server key) and of the CA
    certificate the clients trust."""
    now = datetime.datetime.now(datetime.timezone.utc)
    valid_from, valid_to = now - datetime.timedelta(days=1), now + datetime.timedelta(days=30)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(_name("quiver test CA"))
        .issuer_name(_name("quiver test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False,
                data_encipherment=False, key_agreement=False, key_cert_sign=True,
                crl_sign=True, encipher_only=False, decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("localhost"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    keyfile = directory / "server.pem"
    keyfile.write_bytes(
        cert.public_bytes(pem)
        + ca_cert.public_bytes(pem)
        + key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(pem))
    return keyfile, ca_path


@pytest.fixture(scope="module")
def tls_server(tmp_root):
    root = tmp_root / ("tls-" + unique())
    root.mkdir()
    keyfile, ca_path = write_certificates(root)
    srv = Server(
        root / "data",
        ["--server.endpoint", "ssl://127.0.0.1:0", "--ssl.keyfile", str(keyfile)],
    ).start()
    line = next(l for l in srv.startup if "listening on" in l)
    match = re.search(r"ssl://127\.0\.0\.1:(\d+)", line)
    assert match, line
    srv.ssl_port = int(match.group(1))
    srv.ca_path = str(ca_path)
    yield srv
    assert srv.stop() == 0


def https_client(srv):
    return ArangoClient(
        hosts=f"https://127.0.0.1:{srv.ssl_port}", verify_override=srv.ca_path, request_timeout=30
    )


def test_driver_over_https_sees_the_same_data_as_over_tcp(tls_server, monkeypatch):
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE win over a session's `verify`, which is
    # where python-arango puts verify_override (psf/requests#3829).
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    name = unique("tls")
    tls_db = https_client(tls_server).db("_system", username=ROOT[0], password=ROOT[1])
    assert tls_db.version().startswith("3.12")
    collection = tls_db.create_collection(name)
    collection.insert_many([{"_key": str(i), "n": i} for i in range(20)])
    total = list(tls_db.aql.execute(f"FOR d IN {name} COLLECT AGGREGATE s = SUM(d.n) RETURN s"))
    assert total == [190]
    # The tcp:// endpoint of the same process serves the same database.
    tcp_db = tls_server.client().db("_system", username=ROOT[0], password=ROOT[1])
    assert tcp_db.collection(name).get("7")["n"] == 7
    tcp_db.collection(name).insert({"_key": "tcp", "n": 100})
    assert tls_db.collection(name).get("tcp")["n"] == 100
    assert tls_db.collection(name).count() == 21


def test_curl_chooses_http2_by_alpn(tls_server):
    marker = "\n--curl-meta--"
    out = subprocess.run(
        ["curl", "-sS", "--http2", "--cacert", tls_server.ca_path, "-u", "root:",
         "-w", marker + "%{http_version} %{http_code}",
         f"https://127.0.0.1:{tls_server.ssl_port}/_api/version"],
        capture_output=True, timeout=30, check=True,
    ).stdout.decode()
    body, meta = out.rsplit(marker, 1)
    assert meta.split() == ["2", "200"]
    assert json.loads(body)["server"] == "arango"
    # And the handshake offers both protocols, HTTP/2 preferred.
    context = ssl.create_default_context(cafile=tls_server.ca_path)
    for offered, chosen in ((["h2", "http/1.1"], "h2"), (["http/1.1"], "http/1.1")):
        context.set_alpn_protocols(offered)
        with socket.create_connection(("127.0.0.1", tls_server.ssl_port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                assert tls.selected_alpn_protocol() == chosen
                assert tls.version() in ("TLSv1.3", "TLSv1.2")


def test_wrong_protocol_clients_are_refused_cleanly(tls_server):
    ssl_url = f"127.0.0.1:{tls_server.ssl_port}"
    # Plain HTTP to the TLS port: the connection is closed, no HTTP answer.
    with pytest.raises(requests.exceptions.ConnectionError):
        requests.get(f"http://{ssl_url}/_api/version", auth=ROOT, timeout=15)
    # TLS to the plain port: the handshake fails.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"https://127.0.0.1:{tls_server.port}/_api/version",
                     auth=ROOT, timeout=15, verify=tls_server.ca_path)
    # A client that does not trust the server's CA refuses the certificate.
    with pytest.raises(requests.exceptions.SSLError):
        requests.get(f"https://{ssl_url}/_api/version", auth=ROOT, timeout=15, verify=True)
    # A client limited to TLS 1.1 finds no common version.
    context = ssl.create_default_context(cafile=tls_server.ca_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # TLS 1.1 is deprecated on purpose
        context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
        context.maximum_version = ssl.TLSVersion.TLSv1_1
    with socket.create_connection(("127.0.0.1", tls_server.ssl_port), timeout=10) as raw:
        with pytest.raises(ssl.SSLError):
            context.wrap_socket(raw, server_hostname="localhost")
    # Garbage, then a silent client: the server goes on serving both endpoints.
    with socket.create_connection(("127.0.0.1", tls_server.ssl_port), timeout=10) as raw:
        raw.sendall(b"\x16\x03\x01\x00\x05hello" + bytes(range(256)))
        raw.settimeout(10)
        try:
            assert not raw.recv(65536).startswith(b"HTTP/")
        except ConnectionResetError:
            pass
    silent = socket.create_connection(("127.0.0.1", tls_server.ssl_port), timeout=10)
    try:
        response = requests.get(f"https://{ssl_url}/_api/version", auth=ROOT, timeout=15,
                                verify=tls_server.ca_path)
        assert response.status_code == 200
        assert response.json()["server"] == "arango"
        assert requests.get(f"{tls_server.url}/_api/version", auth=ROOT, timeout=15).status_code == 200
    finally:
        silent.close()


def _startup_error(tmp_root, *args):
    data = tmp_root / ("tls-bad-" + unique())
    result = subprocess.run(
        [quiver_bin(), "serve", "--database.directory", str(data), *args],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode != 0
    return result.stdout + result.stderr


def test_bad_tls_settings_stop_the_startup(tmp_root):
    root = tmp_root / ("tls-keys-" + unique())
    root.mkdir()
    keyfile, ca_path = write_certificates(root)
    ssl_endpoint = ["--server.endpoint", "ssl://127.0.0.1:0"]
    out = _startup_error(tmp_root, *ssl_endpoint, "--ssl.keyfile", str(keyfile), "--ssl.protocol", "4")
    assert "not supported" in out
    out = _startup_error(tmp_root, *ssl_endpoint, "--ssl.keyfile", str(keyfile), "--ssl.protocol", "7")
    assert "invalid --ssl.protocol" in out
    out = _startup_error(tmp_root, *ssl_endpoint)
    assert "--ssl.keyfile" in out
    # A certificate without its key.
    out = _startup_error(tmp_root, *ssl_endpoint, "--ssl.keyfile", str(ca_path))
    assert "private key" in out


def _peer_certificate(port, ca_path):
    """The DER certificate the server presents to a client that trusts `ca_path`."""
    context = ssl.create_default_context(cafile=ca_path)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return tls.getpeercert(binary_form=True)


def _first_certificate_der(keyfile):
    return x509.load_pem_x509_certificate(keyfile.read_bytes()).public_bytes(serialization.Encoding.DER)


def test_tls_keyfile_summary_and_reload(tmp_root):
    root = tmp_root / ("tls-reload-" + unique())
    root.mkdir()
    first_dir, second_dir = root / "first", root / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    keyfile, first_ca = write_certificates(first_dir)
    secret = "jwt-secret-of-the-tls-reload-test-0123456789"
    now = int(time.time())
    superuser = "bearer " + jwt.encode(
        {"iss": "arangodb", "iat": now, "exp": now + 3600, "server_id": "e2e"}, secret, algorithm="HS256")
    srv = Server(
        root / "data",
        ["--server.endpoint", "ssl://127.0.0.1:0", "--ssl.keyfile", str(keyfile),
         "--server.jwt-secret", secret],
    ).start()
    try:
        line = next(l for l in srv.startup if "listening on" in l)
        ssl_port = int(re.search(r"ssl://127\.0\.0\.1:(\d+)", line).group(1))
        tls_url = srv.url + "/_admin/server/tls"

        def summary():
            r = requests.get(tls_url, auth=ROOT, timeout=15)
            assert r.status_code == 200, r.text
            assert r.json()["error"] is False and r.json()["code"] == 200
            return r.json()["result"]["keyfile"]

        first = summary()
        assert first["sha256"] == hashlib.sha256(keyfile.read_bytes()).hexdigest()
        assert len(first["certificates"]) == 2  # server certificate and CA, as in the file
        der = x509.load_pem_x509_certificate(first["certificates"][0].encode()).public_bytes(
            serialization.Encoding.DER)
        assert der == _first_certificate_der(keyfile) == _peer_certificate(ssl_port, str(first_ca))
        assert re.fullmatch(r"[0-9a-f]{64}", first["privateKeySha256"])
        assert requests.get(tls_url, timeout=15).status_code == 401

        # A new certificate from another CA replaces the file; nothing changes until the reload.
        new_keyfile, second_ca = write_certificates(second_dir)
        keyfile.write_bytes(new_keyfile.read_bytes())
        assert _peer_certificate(ssl_port, str(first_ca)) == der
        # Only the superuser reloads (root is an administrator, not the superuser).
        r = requests.post(tls_url, auth=ROOT, timeout=15)
        assert (r.status_code, r.json()["errorNum"]) == (403, 11)
        r = requests.post(tls_url, headers={"Authorization": superuser}, timeout=15)
        assert r.status_code == 200, r.text
        second = r.json()["result"]["keyfile"]
        assert second["sha256"] == hashlib.sha256(keyfile.read_bytes()).hexdigest() != first["sha256"]
        assert second["privateKeySha256"] != first["privateKeySha256"]
        assert summary() == second
        # New handshakes present the new certificate; the old CA no longer verifies it.
        assert _peer_certificate(ssl_port, str(second_ca)) == _first_certificate_der(keyfile) != der
        with pytest.raises(ssl.SSLCertVerificationError):
            _peer_certificate(ssl_port, str(first_ca))

        # A broken keyfile is refused and the certificate in use stays.
        keyfile.write_text("not a certificate")
        r = requests.post(tls_url, headers={"Authorization": superuser}, timeout=15)
        assert (r.status_code, r.json()["errorNum"]) == (400, 10), r.text
        assert "no certificate" in r.json()["errorMessage"]
        assert summary() == second
        assert _peer_certificate(ssl_port, str(second_ca)) == der_of(second)

        # Encryption at rest does not exist: ArangoDB's Community answer.
        r = requests.post(srv.url + "/_admin/server/encryption", headers={"Authorization": superuser}, timeout=15)
        assert (r.status_code, r.json()["errorNum"]) == (404, 404)
    finally:
        assert srv.stop() == 0


def der_of(keyfile_summary):
    return x509.load_pem_x509_certificate(keyfile_summary["certificates"][0].encode()).public_bytes(
        serialization.Encoding.DER)
