#!/usr/bin/python3
"""Writes tests/data/train/rng-state-S.safetensors: the files LeRobot's save_rng_state() writes
(utils/random_utils.py: py_rng_version, py_rng_state, np_rng_state_*, torch_rng_state) right after
set_seed(S), from the real CPython random, NumPy and PyTorch generators. The safetensors file is
written by hand (header + little-endian data) so that only python3-torch and python3-numpy are
needed. Usage: /usr/bin/python3 make-rng-state.py S OUT.safetensors
Generated with Debian 12's python3 3.11, python3-numpy 1.24.2, python3-torch 1.13."""
import json
import random
import struct
import sys

import numpy as np
import torch

seed = int(sys.argv[1])
random.seed(seed)
np.random.seed(seed)
torch.manual_seed(seed)

py = random.getstate()
npst = np.random.get_state()
tensors = {
    "py_rng_version": ("I64", [1], struct.pack("<q", py[0])),
    "py_rng_state": ("I64", [len(py[1])], struct.pack("<%dq" % len(py[1]), *py[1])),
    "np_rng_state_values": ("I64", [len(npst[1])], struct.pack("<%dq" % len(npst[1]), *[int(v) for v in npst[1]])),
    "np_rng_state_index": ("I64", [1], struct.pack("<q", npst[2])),
    "np_rng_has_gauss": ("I64", [1], struct.pack("<q", npst[3])),
    "np_rng_cached_gaussian": ("F32", [1], struct.pack("<f", npst[4])),
    "torch_rng_state": ("U8", [torch.get_rng_state().numel()], bytes(torch.get_rng_state().numpy().tobytes())),
}
header, data = {}, b""
for name in sorted(tensors):
    dtype, shape, raw = tensors[name]
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
    data += raw
text = json.dumps(header, separators=(",", ":")).encode()
text += b" " * (-len(text) % 8)
with open(sys.argv[2], "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + data)
