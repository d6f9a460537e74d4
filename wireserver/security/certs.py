"""A throwaway CA and certificates for tests (``EmbeddedBroker(tls=True)``), with
``cryptography``. Keys are EC P-256; everything is valid for a day."""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass
class Issued:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    @property
    def key_pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def make_ca(common_name: str = "wireserver test CA") -> Issued:
    key = ec.generate_private_key(ec.SECP256R1())
    name = _name(common_name)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(_now() + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    return Issued(cert, key)


def issue(
    ca: Issued,
    common_name: str,
    *,
    organization: str | None = None,
    hosts: tuple[str, ...] = (),
    client: bool = False,
) -> Issued:
    """A certificate signed by ``ca``: a server certificate for ``hosts`` (DNS names or IP
    addresses), or with ``client=True`` a client certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organization))
        .issuer_name(ca.cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(_now() + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.CLIENT_AUTH]
                if client
                else [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
    )
    if hosts:
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return Issued(builder.sign(ca.key, hashes.SHA256()), key)


@dataclass
class PkiFiles:
    """Files of a test PKI: ``ca`` (CA cert) and ``ca_key`` (to issue more certificates,
    ``load_ca``), ``server`` (cert chain + key in one PEM), ``client_cert`` / ``client_key``
    for a client called ``client_cn``."""

    directory: str
    ca: str
    ca_key: str
    server: str
    server_cert: str
    server_key: str
    client_cert: str
    client_key: str
    client_dn: str
    admin_cert: str
    admin_key: str
    admin_dn: str


def load_ca(pki: PkiFiles) -> Issued:
    """The CA of a test PKI, to issue more certificates with ``issue``."""
    with open(pki.ca, "rb") as cert, open(pki.ca_key, "rb") as key:
        ca_key = serialization.load_pem_private_key(key.read(), None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        return Issued(x509.load_pem_x509_certificate(cert.read()), ca_key)


def write_test_pki(
    directory: str, client_cn: str = "client", client_org: str | None = "wireserver"
) -> PkiFiles:
    os.makedirs(directory, exist_ok=True)
    ca = make_ca()
    server = issue(ca, "localhost", hosts=("localhost", "127.0.0.1", "::1"))
    client = issue(ca, client_cn, organization=client_org, client=True)
    admin = issue(ca, "wireserver-admin", organization=client_org, client=True)

    def write(name: str, data: bytes) -> str:
        path = os.path.join(directory, name)
        with open(path, "wb") as handle:
            handle.write(data)
        return path

    return PkiFiles(
        directory=directory,
        ca=write("ca.pem", ca.cert_pem),
        ca_key=write("ca-key.pem", ca.key_pem),
        server=write("server.pem", server.cert_pem + server.key_pem),
        server_cert=write("server-cert.pem", server.cert_pem),
        server_key=write("server-key.pem", server.key_pem),
        client_cert=write("client-cert.pem", client.cert_pem),
        client_key=write("client-key.pem", client.key_pem),
        client_dn=client.cert.subject.rfc4514_string(),
        admin_cert=write("admin-cert.pem", admin.cert_pem),
        admin_key=write("admin-key.pem", admin.key_pem),
        admin_dn=admin.cert.subject.rfc4514_string(),
    )
