#!/usr/bin/env python3
"""Writes the safetensors fixtures of tests/test-safetensors.c with the Python standard library
only (struct, json): a second, independent writer of the format. Run it in this folder; the
outputs are committed, so the tests do not need Python.

reference-layout.safetensors: laid out as huggingface/safetensors' own writer does (the Rust
  `prepare()` behind safetensors.torch.save_file): tensors sorted by descending dtype alignment
  (the order of its Dtype enum), then by name; compact JSON, "__metadata__" first (its keys
  sorted: the reference writes them in hash order), header padded with spaces to a multiple of 8.
  robotrain's writer must reproduce it byte for byte.
foreign-layout.safetensors: what another writer may produce and a reader must still accept:
  indented JSON with \\u escapes (a surrogate pair), metadata last, keys of an entry in another
  order, header order unlike data order, unaligned data, two empty tensors sharing an offset, a
  scalar, no padding.
"""
import json
import struct

# The reference writer's dtype order (increasing alignment) and element sizes.
DTYPES = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16",
          "I32", "U32", "F32", "F64", "I64", "U64"]
SIZE = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2,
        "BF16": 2, "I32": 4, "U32": 4, "F32": 4, "F64": 8, "I64": 8, "U64": 8}
PACK = {"BOOL": "B", "U8": "B", "I8": "b", "F8_E5M2": "B", "F8_E4M3": "B", "I16": "h", "U16": "H",
        "F16": "e", "BF16": "H", "I32": "i", "U32": "I", "F32": "f", "F64": "d", "I64": "q", "U64": "Q"}


def bf16(x):
    """bfloat16 bits of a value that float32 holds exactly and bfloat16 too."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    assert bits & 0xFFFF == 0, x
    return bits >> 16


def payload(dtype, shape, values):
    count = 1
    for d in shape:
        count *= d
    assert len(values) == count, (dtype, shape, values)
    if dtype == "BF16":
        values = [bf16(v) for v in values]
    data = struct.pack("<%d%s" % (count, PACK[dtype]), *values)
    assert len(data) == count * SIZE[dtype]
    return data


# (name, dtype, shape, values): the test checks these values.
TENSORS = [
    ("weight", "F32", [2, 3], [-1.0, -0.5, 0.0, 0.5, 1.0, 1.5]),
    ("bias", "F32", [3], [0.25, -0.125, 3.0]),
    ("empty", "F32", [0, 3], []),
    ("scale", "F64", [], [3.141592653589793]),
    ("steps", "I64", [2], [-2, 1 << 40]),
    ("half", "F16", [2, 2], [1.0, -2.5, 65504.0, 2.0 ** -24]),
    ("brain", "BF16", [3], [1.0, -3.140625, 256.0]),
    ("mask", "BOOL", [4], [1, 0, 0, 1]),
    ("codes", "I8", [3], [-128, 0, 127]),
    ("pixels", "U8", [2], [0, 255]),
    ("short", "I16", [2], [-32768, 12345]),
    ("ushort", "U16", [1], [65535]),
    ("int", "I32", [2], [-7, 2147483647]),
    ("uint", "U32", [1], [4294967295]),
    ("ulong", "U64", [1], [18446744073709551615]),
    ("fp8a", "F8_E4M3", [2], [0x38, 0xB8]),  # 1.0, -1.0
    ("fp8b", "F8_E5M2", [1], [0x3C]),  # 1.0
]
METADATA = {"format": "pt", "note": 'two\nlines, "quoted", caf\u00e9'}


def reference_layout():
    order = sorted(TENSORS, key=lambda t: (-DTYPES.index(t[1]), t[0].encode()))
    header = {"__metadata__": dict(sorted(METADATA.items()))}
    data = b""
    for name, dtype, shape, values in order:
        blob = payload(dtype, shape, values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def foreign_layout():
    # data order: codes, values (unaligned F32 at 3), empty.b and empty.a at 11, the odd name, scalar
    blobs = [
        ("codes", "I8", [3], [1, 2, 3]),
        ("values", "F32", [2], [1.5, -2.0]),
        ("empty.b", "BOOL", [2, 0], []),
        ("empty.a", "F16", [0], []),
        ("caf\u00e9 \U0001F916\n", "F16", [1], [0.5]),
        ("scalar", "I32", [], [-5]),
    ]
    offsets = {}
    data = b""
    for name, dtype, shape, values in blobs:
        blob = payload(dtype, shape, values)
        offsets[name] = (dtype, shape, [len(data), len(data) + len(blob)])
        data += blob
    header = {}
    for name in ["values", "scalar", "empty.b", "codes", "empty.a", "caf\u00e9 \U0001F916\n"]:
        dtype, shape, span = offsets[name]
        header[name] = {"data_offsets": span, "dtype": dtype, "shape": shape}
    header["__metadata__"] = {"z": "last", "a": "first"}
    text = (json.dumps(header, indent=2, ensure_ascii=True) + "\n").encode()
    return struct.pack("<Q", len(text)) + text + data


if __name__ == "__main__":
    with open("reference-layout.safetensors", "wb") as f:
        f.write(reference_layout())
    with open("foreign-layout.safetensors", "wb") as f:
        f.write(foreign_layout())
