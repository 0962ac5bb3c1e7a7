"""A throwaway PKI for the REST TLS tests, generated with `cryptography`.

`Pki.make(directory)` writes a CA, a server certificate for localhost / 127.0.0.1 / ::1, a
client certificate signed by the same CA, and a second CA with its own client certificate
(the one mTLS must refuse). Keys are PEM (PKCS#8); `pkcs12()` and `encrypted_key()` give the
other keystore shapes Kafka accepts.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

_DAY = datetime.timedelta(days=1)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _pem_key(key: ec.EllipticCurvePrivateKey, password: str | None = None) -> bytes:
    encryption = serialization.BestAvailableEncryption(password.encode()) if password else serialization.NoEncryption()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _pem_cert(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _issue(
    subject: str,
    issuer: tuple[x509.Certificate, ec.EllipticCurvePrivateKey] | None,
    *,
    ca: bool = False,
    sans: list[x509.GeneralName] | None = None,
    usages: list[x509.ObjectIdentifier] | None = None,
) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer_cert.subject if issuer_cert else _name(subject))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + 30 * _DAY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        ).add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        assert issuer_cert is not None
        ski = issuer_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False
        )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    return builder.sign(issuer_key, hashes.SHA256()), key


@dataclass(frozen=True)
class Pki:
    directory: Path
    ca_cert: Path
    server_cert: Path  # leaf only
    server_key: Path
    server_keystore_pem: Path  # key + chain in one file, as ssl.keystore.type=PEM takes it
    client_cert: Path
    client_key: Path
    other_ca_cert: Path
    other_client_cert: Path  # signed by the other CA: mTLS must refuse it
    other_client_key: Path

    @classmethod
    def make(cls, directory: Path, server_names: tuple[str, ...] = ("localhost",)) -> Pki:
        directory.mkdir(parents=True, exist_ok=True)
        ca = _issue("cdc test CA", None, ca=True)
        sans: list[x509.GeneralName] = [x509.DNSName(n) for n in server_names]
        sans += [x509.IPAddress(ipaddress.ip_address(a)) for a in ("127.0.0.1", "::1")]
        # Both usages: a worker's certificate is also its client certificate when it forwards to peers.
        both = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
        server = _issue("cdc worker", ca, sans=sans, usages=both)
        client = _issue("cdc client", ca, usages=[ExtendedKeyUsageOID.CLIENT_AUTH])
        other_ca = _issue("unrelated CA", None, ca=True)
        other_client = _issue("intruder", other_ca, usages=[ExtendedKeyUsageOID.CLIENT_AUTH])

        def write(name: str, data: bytes) -> Path:
            path = directory / name
            path.write_bytes(data)
            path.chmod(0o600)
            return path

        return cls(
            directory=directory,
            ca_cert=write("ca.pem", _pem_cert(ca[0])),
            server_cert=write("server.pem", _pem_cert(server[0])),
            server_key=write("server-key.pem", _pem_key(server[1])),
            server_keystore_pem=write("server-keystore.pem", _pem_key(server[1]) + _pem_cert(server[0])),
            client_cert=write("client.pem", _pem_cert(client[0])),
            client_key=write("client-key.pem", _pem_key(client[1])),
            other_ca_cert=write("other-ca.pem", _pem_cert(other_ca[0])),
            other_client_cert=write("other-client.pem", _pem_cert(other_client[0])),
            other_client_key=write("other-client-key.pem", _pem_key(other_client[1])),
        )

    def _load(self, cert: Path, key: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        loaded = serialization.load_pem_private_key(key.read_bytes(), None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        return x509.load_pem_x509_certificate(cert.read_bytes()), loaded

    def server_pkcs12(self, password: str) -> Path:
        """The server key and certificate (with the CA in the chain) as a PKCS12 keystore."""
        cert, key = self._load(self.server_cert, self.server_key)
        ca = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        data = pkcs12.serialize_key_and_certificates(
            b"worker", key, cert, [ca], serialization.BestAvailableEncryption(password.encode())
        )
        path = self.directory / "server.p12"
        path.write_bytes(data)
        return path

    def ca_pkcs12(self, password: str) -> Path:
        """A PKCS12 truststore holding only the CA certificate (what keytool -import makes)."""
        ca = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        data = pkcs12.serialize_java_truststore(
            [pkcs12.PKCS12Certificate(ca, b"ca")], serialization.BestAvailableEncryption(password.encode())
        )
        path = self.directory / "truststore.p12"
        path.write_bytes(data)
        return path

    def encrypted_server_key(self, password: str) -> str:
        """The server key as an encrypted PKCS#8 PEM string (ssl.keystore.key with ssl.key.password)."""
        _, key = self._load(self.server_cert, self.server_key)
        return _pem_key(key, password).decode()
