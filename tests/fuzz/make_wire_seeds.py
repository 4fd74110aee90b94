#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes the seed corpus of fuzz_wire into corpus/wire/.

Each seed is a frame list in fuzz_wire.c's input format: per frame a 2-byte
little-endian length, then the bytes. Signatures use fuzz_wire's fixed key.
Run from anywhere: python3 tests/fuzz/make_wire_seeds.py
"""
import hashlib
import hmac
import os
import struct

KEY = b"cflame-fuzz-key"
DELIM = b"<IDS|MSG>"
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "wire")


def frames_to_seed(frames):
    return b"".join(struct.pack("<H", len(f)) + f for f in frames)


def message(idents, header, parent, metadata, content, buffers=(), key=KEY):
    parts = [header, parent, metadata, content]
    sig = hmac.new(key, b"".join(parts), hashlib.sha256).hexdigest().encode() if key else b""
    return list(idents) + [DELIM, sig] + parts + list(buffers)


HEADER = (b'{"msg_id":"a1b2c3d4-0000-4000-8000-000000000001","session":"s",'
          b'"username":"u","date":"2026-01-01T00:00:00.000000Z",'
          b'"msg_type":"execute_request","version":"5.3"}')

SEEDS = {
    # A signed execute_request with a ZeroMQ-style binary identity.
    "signed_execute_request": message(
        [b"\x00k\x8b\x45\x67"], HEADER, b"{}", b"{}",
        b'{"code":"int x = 1;\\n","silent":false,"store_history":true,'
        b'"user_expressions":{},"allow_stdin":true,"stop_on_error":true}'),
    # Unsigned, with nested JSON, numbers, unicode and binary buffers.
    "unsigned_with_buffers": message(
        [b"id-1", b""], HEADER, b'{"msg_id":"p","n":[1,-2.5e10,true,null]}',
        b'{"m":{"deep":[[[]]]}}', b'{"text":"h\xc3\xa9llo \\u2603","x":0.1}',
        [b"\x00\x01\x02", b""], key=None),
    # Signed reply to a parent, no idents.
    "signed_no_idents": message(
        [], HEADER.replace(b"execute_request", b"kernel_info_request"),
        HEADER, b'{"a":"b"}', b"{}"),
}

os.makedirs(OUT, exist_ok=True)
for name, frames in SEEDS.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(frames_to_seed(frames))
