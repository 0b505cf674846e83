"""Writing a tessera model directory's files with numpy alone (docs/model-format.md),
for every converter: model.safetensors and the vocabulary files.

safetensors: an 8-byte little-endian header length, the JSON header (tensors
in name order, then "__metadata__"; compact, space-padded to a multiple of 8
bytes so that the data is aligned), then each tensor's little-endian bytes in
that order.
"""

import json
import struct

import numpy as np

F16_MAX = 65504.0


def tensor_bytes(values, dtype):
    """The little-endian bytes of values as dtype "F32", "F16" or "BF16" (BF16:
    rounded to nearest even). ValueError for a value beyond F16's range."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if dtype == "F32":
        return values.astype("<f4").tobytes()
    if dtype == "F16":
        if np.any(np.abs(values) > F16_MAX):
            raise ValueError("a tensor holds values beyond F16's range; convert with F32")
        return values.astype("<f2").tobytes()
    if dtype == "BF16":
        bits = values.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
    raise ValueError("unknown dtype %r" % dtype)


def write_safetensors(path, tensors, metadata, dtype="F32"):
    """tensors: name -> array; every one stored as dtype; metadata: str -> str."""
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        data = tensor_bytes(tensors[name], dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(tensors[name])),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in blobs:
            f.write(data)


def write_vocab(path, pieces):
    """One piece per line, line number = id."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for piece in pieces:
            f.write(piece + "\n")
