#!/usr/bin/env python3
"""An independent verifier of a tminus certification bundle (tests/it/bundle.rs).

Written from the formats, not from tminus's code: the DSSE v1 envelope
(secure-systems-lab/dsse protocol.md: the signature is over
PAE = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body), the in-toto
Statement v1 (subject names with sha256 digests) and ed25519 as the
`cryptography` package implements it. Uses the standard library's tarfile
and hashlib and nothing of tminus.

usage: verify_bundle.py BUNDLE.tar.gz PUBLIC_KEY.pem
exit 0: verified (prints one line per file); 1: something differs (named).
"""

import base64
import hashlib
import json
import sys
import tarfile

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_pem_public_key

ENVELOPE = "manifest.dsse.json"
STATEMENT = "https://in-toto.io/Statement/v1"
PREDICATE = "https://in-toto.io/attestation/test-result/v0.1"


def pae(payload_type: bytes, payload: bytes) -> bytes:
    return b"DSSEv1 %d %s %d %s" % (len(payload_type), payload_type, len(payload), payload)


def fail(msg: str) -> None:
    print(f"FAIL {msg}")
    sys.exit(1)


def main() -> None:
    bundle, key_file = sys.argv[1], sys.argv[2]
    with open(key_file, "rb") as f:
        key = load_pem_public_key(f.read())
    if not isinstance(key, Ed25519PublicKey):
        fail(f"{key_file} is not an ed25519 public key")

    files = {}
    with tarfile.open(bundle, "r:gz") as tar:
        for m in tar.getmembers():
            if not m.isfile():
                fail(f"{m.name}: not a regular file")
            if m.name.startswith("/") or ".." in m.name.split("/"):
                fail(f"{m.name}: leaves the bundle")
            if m.name in files:
                fail(f"{m.name}: twice in the bundle")
            files[m.name] = tar.extractfile(m).read()

    if ENVELOPE not in files:
        fail(f"{ENVELOPE}: missing")
    env = json.loads(files.pop(ENVELOPE))
    if env["payloadType"] != "application/vnd.in-toto+json":
        fail(f"{ENVELOPE}: payloadType {env['payloadType']}")
    payload = base64.b64decode(env["payload"], validate=True)
    signed = pae(env["payloadType"].encode(), payload)
    if not env["signatures"]:
        fail(f"{ENVELOPE}: unsigned")
    for s in env["signatures"]:
        try:
            key.verify(base64.b64decode(s["sig"], validate=True), signed)
            break
        except InvalidSignature:
            continue
    else:
        fail(f"{ENVELOPE}: no signature verifies")
    print(f"ok signature {ENVELOPE}")

    statement = json.loads(payload)
    if statement["_type"] != STATEMENT or statement["predicateType"] != PREDICATE:
        fail(f"{ENVELOPE}: not an in-toto test-result Statement")
    named = set()
    for subject in statement["subject"]:
        name, want = subject["name"], subject["digest"]["sha256"]
        named.add(name)
        if name not in files:
            fail(f"{name}: missing")
        got = hashlib.sha256(files[name]).hexdigest()
        if got != want:
            fail(f"{name}: sha256 {got}, manifest {want}")
        print(f"ok {want} {name}")
    extra = sorted(set(files) - named)
    if extra:
        fail(f"{extra[0]}: not in the manifest")
    print(f"verified {len(named)} files; result {statement['predicate']['result']}")


if __name__ == "__main__":
    main()
