"""Certificates for the TLS rigs, generated with `cryptography`: a CA, a server certificate for
localhost/127.0.0.1, a client certificate, and an unrelated CA to be refused.

Everything is written as PEM (keys unencrypted unless a password is given), plus PKCS12 stores
for clients that take Java-style keystores/truststores.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


@dataclass(frozen=True)
class Pki:
    """PEM files (and PKCS12 stores) of one test PKI, all in `directory`."""

    directory: Path
    ca_cert: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    other_ca_cert: Path  # a CA that signed nothing here: the wrong CA

    def client_key_encrypted(self, password: str) -> Path:
        """The client key again, encrypted with `password` (PEM, 0600)."""
        key = serialization.load_pem_private_key(self.client_key.read_bytes(), None)
        path = self.directory / "client-key-encrypted.pem"
        _write(
            path,
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(password.encode()),
            ),
        )
        return path

    def keystore_p12(self, password: str) -> Path:
        """The client's key and certificate (with the CA in its chain) as a PKCS12 keystore."""
        key = serialization.load_pem_private_key(self.client_key.read_bytes(), None)
        cert = x509.load_pem_x509_certificate(self.client_cert.read_bytes())
        ca = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        data = pkcs12.serialize_key_and_certificates(
            b"client",
            key,
            cert,
            [ca],
            serialization.BestAvailableEncryption(password.encode()),  # type: ignore[arg-type]
        )
        path = self.directory / "keystore.p12"
        _write(path, data)
        return path

    def truststore_p12(self, password: str, ca: Path | None = None) -> Path:
        """A PKCS12 truststore holding only a CA certificate (`ca`, default the PKI's CA)."""
        cert = x509.load_pem_x509_certificate((ca or self.ca_cert).read_bytes())
        data = pkcs12.serialize_key_and_certificates(
            None, None, None, [cert], serialization.BestAvailableEncryption(password.encode())
        )
        path = self.directory / f"truststore-{(ca or self.ca_cert).stem}.p12"
        _write(path, data)
        return path


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    os.chmod(path, 0o600)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _ca(cn: str) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(_name(cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def _leaf(
    cn: str,
    ca: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    usage: x509.ObjectIdentifier,
    sans: list[x509.GeneralName],
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _key()
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(cn))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def make_pki(
    directory: Path, client_cn: str = "cdc", server_names: tuple[str, ...] = ("localhost", "127.0.0.1")
) -> Pki:
    """A CA, a server certificate for `server_names` (subject alternative names: host names or IP
    addresses), a client certificate with CN `client_cn` (PostgreSQL's `cert` authentication maps
    the CN to the user), and another CA."""
    directory.mkdir(parents=True, exist_ok=True)
    ca, ca_key = _ca("cdc test CA")
    server, server_key = _leaf(
        "localhost", ca, ca_key, ExtendedKeyUsageOID.SERVER_AUTH, [_san(n) for n in server_names]
    )
    client, client_key = _leaf(client_cn, ca, ca_key, ExtendedKeyUsageOID.CLIENT_AUTH, [])
    other, _ = _ca("cdc unrelated CA")
    pem = serialization.Encoding.PEM
    files = {
        "ca.pem": ca.public_bytes(pem),
        "server-cert.pem": server.public_bytes(pem),
        "server-key.pem": _pem_key(server_key),
        "client-cert.pem": client.public_bytes(pem),
        "client-key.pem": _pem_key(client_key),
        "other-ca.pem": other.public_bytes(pem),
    }
    for name, data in files.items():
        _write(directory / name, data)
    d = directory
    return Pki(
        d, d / "ca.pem", d / "server-cert.pem", d / "server-key.pem", d / "client-cert.pem", d / "client-key.pem",
        d / "other-ca.pem",
    )  # fmt: skip
