#!/usr/bin/env python3
"""Writes Tests/Vectors/app-data-v2.json: known answers for sealing app data in its place (docs/PROTOCOL.md,
"Sealing app data"), computed here with Python's `cryptography`, apart from both implementations that check them
(AppDataCipher in Swift: AppDataVectorTests; the browser page's WebCrypto: web-peer-check.py --vectors).

    make-app-data-vectors.py [OUT]
"""
import json
import os
import struct
import sys

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

SECRET, SESSION = "correct horse battery staple", "movie-night"


def string(text):
    data = text.encode()
    return struct.pack(">I", len(data)) + data


def place_data(place):
    kind = place["kind"]
    if kind == "message":
        return (b"\x01" + string(SESSION) + string(place["sender"]) + bytes([place["delivery"]])
                + struct.pack(">Q", place["sequence"]))
    if kind == "name":
        return b"\x02" + string(SESSION) + string(place["owner"]) + string(place["id"])
    if kind == "record":
        return (b"\x03" + string(SESSION) + string(place["owner"]) + string(place["id"])
                + struct.pack(">Q", place["index"]) + bytes([1 if place["final"] else 0]))
    raise ValueError(kind)


def header(to_everyone, epoch):
    return bytes([0 if to_everyone else 1]) + struct.pack(">I", epoch)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "Tests", "Vectors",
                                                             "app-data-v2.json")
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=SESSION.encode(),
               info=b"tandem app data v2").derive(SECRET.encode())
    cases = [
        ("a chat line to everyone", {"kind": "message", "sender": "p1", "delivery": 0, "sequence": 1},
         header(True, 1) + b'\x01{"type":"TandemPeer.ChatLine","body":"eyJ0ZXh0IjoiaGkifQ=="}'),
        ("an unreliable message to some, after two reconnects",
         {"kind": "message", "sender": "p3", "delivery": 1, "sequence": 7}, header(False, 3) + b"\x00ping"),
        ("an attachment's name", {"kind": "name", "owner": "p1", "id": "p1-1-42"}, "value:TandemPeer.PreviewImage".encode()),
        ("an attachment's first record", {"kind": "record", "owner": "p1", "id": "p1-1-42", "index": 0, "final": False},
         b"first piece "),
        ("an attachment's last record", {"kind": "record", "owner": "p1", "id": "p1-1-42", "index": 1, "final": True},
         b"last piece"),
        ("an empty attachment's one record", {"kind": "record", "owner": "p2", "id": "empty", "index": 0, "final": True},
         b""),
    ]
    vectors = []
    for number, (name, place, plaintext) in enumerate(cases):
        nonce = bytes((number * 16 + i) & 0xFF for i in range(12))
        aad = place_data(place)
        box = nonce + AESGCM(key).encrypt(nonce, plaintext, aad)
        vectors.append({"name": name, "place": place, "aad": aad.hex(), "nonce": nonce.hex(),
                        "plaintext": plaintext.hex(), "box": box.hex()})
    document = {"secret": SECRET, "session": SESSION, "info": "tandem app data v2", "key": key.hex(), "boxes": vectors}
    with open(out, "w") as f:
        json.dump(document, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
