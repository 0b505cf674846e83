"""CTranslate2 model directories, read and written with numpy alone.

Written from the layout CTranslate2 documents for its writer
(python/ctranslate2/specs/model_spec.py, ModelSpec._serialize) and its
readers' rules (src/models/model.cc, src/vocabulary.cc), not from tessera's
C reader, so that tessera's tests hold that reader to an independent one:

model.bin, little-endian:
    u32 binary version (1 to 6)
    version >= 2: string spec name, u32 spec revision (else revision 1)
    u32 variable count; per variable: string name, u8 rank, u32 dims[rank],
        version >= 4: u8 dtype id (float32 0, int8 1, int16 2, int32 3,
        float16 4, bfloat16 5) and u32 byte count; before: u8 item size
        (4 float32, 2 int16, 1 int8) and u32 value count; then the values
    version >= 3: u32 alias count; per alias: string alias, string target
    where a string is a u16 length that counts its NUL, the bytes, the NUL.

Binary version 1 files hold OpenNMT-tf's names, which CTranslate2 renames
(models/transformer.cc: map_v1_variable_name); read() does the same when
asked. Vocabularies are NAME.json (a list of strings) or NAME.txt (a token a
line; a final CR dropped only when every line has one), and the unknown token
is appended when absent.
"""

import json
import os
import struct

import numpy as np

DTYPES = {0: np.float32, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.float16, 5: "bfloat16"}
DTYPE_IDS = {"float32": 0, "int8": 1, "int16": 2, "int32": 3, "float16": 4, "bfloat16": 5}
ITEM_SIZES = {0: 4, 1: 1, 2: 2, 3: 4, 4: 2, 5: 2}


class BFloat16:
    """A bfloat16 array kept as its uint16 bits (numpy has no bfloat16)."""

    def __init__(self, bits, shape):
        self.bits = np.asarray(bits, dtype=np.uint16).reshape(shape)
        self.shape = tuple(shape)

    @staticmethod
    def from_float(x):
        """Round to nearest even, as torch's .to(torch.bfloat16)."""
        u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
        return BFloat16(u.astype(np.uint16), np.shape(x))

    def to_float(self):
        return (self.bits.astype(np.uint32) << 16).view(np.float32).reshape(self.shape)


def map_v1_name(name):
    """CTranslate2's renaming of OpenNMT-tf's names (the first match of each)."""
    for old, new in [("transformer/", ""), (":0", ""), ("w_embs", "embeddings/weight"),
                     ("kernel", "weight"), ("LayerNorm", "layer_norm"), ("dense", "projection"),
                     ("conv1d_", "linear_"), ("conv1d", "linear_0")]:
        name = name.replace(old, new, 1)
    if "encoder" in name:
        name = name.replace("multi_head", "self_attention", 1)
    else:
        name = name.replace("masked_multi_head", "self_attention", 1)
        name = name.replace("multi_head", "attention", 1)
    return name


def read(path, rename_v1=True):
    """(header dict, {name: array}) of a model.bin; aliases resolve to their
    target's array (and its "_scale"). bfloat16 values come as BFloat16."""
    data = open(path, "rb").read()
    at = 0

    def take(fmt):
        nonlocal at
        values = struct.unpack_from("<" + fmt, data, at)
        at += struct.calcsize("<" + fmt)
        return values[0] if len(values) == 1 else values

    def string():
        nonlocal at
        n = take("H")
        text = data[at:at + n - 1].decode("utf-8")
        at += n
        return text

    version = take("I")
    spec, revision = "", 1
    if version >= 2:
        spec = string()
        revision = take("I")
    variables = {}
    for _ in range(take("I")):
        name = string()
        rank = take("B")
        shape = [take("I") for _ in range(rank)]
        if version >= 4:
            dtype = take("B")
            nbytes = take("I")
        else:
            dtype = {4: 0, 2: 2, 1: 1}[take("B")]
            nbytes = take("I") * ITEM_SIZES[dtype]
        raw = data[at:at + nbytes]
        at += nbytes
        if DTYPES[dtype] == "bfloat16":
            value = BFloat16(np.frombuffer(raw, dtype=np.uint16), shape)
        else:
            value = np.frombuffer(raw, dtype=DTYPES[dtype]).reshape(shape)
        if rename_v1 and revision == 1 and spec in ("", "TransformerBase", "TransformerBig",
                                                   "TransformerSpec"):
            name = map_v1_name(name)
        variables[name] = value
    if version >= 3:
        for _ in range(take("I")):
            alias, target = string(), string()
            for suffix in ("", "_scale"):
                if target + suffix in variables and alias + suffix not in variables:
                    variables[alias + suffix] = variables[target + suffix]
    return {"version": version, "spec": spec, "revision": revision}, variables


def write(path, variables, aliases=(), version=6, spec="TransformerSpec", revision=7):
    """Writes variables ([(name, array)], arrays of numpy dtypes or
    BFloat16; Python bools and floats become int8 and float32 scalars) and
    aliases ([(alias, target)]) as binary `version`, in the given order."""
    out = bytearray()

    def string(text):
        raw = text.encode("utf-8")
        out.extend(struct.pack("<H", len(raw) + 1) + raw + b"\0")

    out.extend(struct.pack("<I", version))
    if version >= 2:
        string(spec)
        out.extend(struct.pack("<I", revision))
    out.extend(struct.pack("<I", len(variables)))
    for name, value in variables:
        if isinstance(value, bool):
            value = np.int8(value)
        elif isinstance(value, float):
            value = np.float32(value)
        if isinstance(value, BFloat16):
            shape, dtype_id, raw = value.shape, 5, value.bits.tobytes()
        else:
            value = np.asarray(value)
            shape, dtype_id, raw = value.shape, DTYPE_IDS[value.dtype.name], value.tobytes()
        string(name)
        out.extend(struct.pack("<B", len(shape)))
        for dim in shape:
            out.extend(struct.pack("<I", dim))
        if version >= 4:
            out.extend(struct.pack("<BI", dtype_id, len(raw)))
        else:
            size = ITEM_SIZES[dtype_id]
            out.extend(struct.pack("<BI", size, len(raw) // size))
        out.extend(raw)
    if version >= 3:
        out.extend(struct.pack("<I", len(aliases)))
        for alias, target in aliases:
            string(alias)
            string(target)
    with open(path, "wb") as f:
        f.write(bytes(out))


def read_vocabulary(model_dir, name, unk="<unk>"):
    """NAME.json or NAME.txt of model_dir (None when neither), <unk> appended
    when absent."""
    path = os.path.join(model_dir, name + ".json")
    if os.path.exists(path):
        tokens = json.load(open(path, encoding="utf-8"))
    else:
        path = os.path.join(model_dir, name + ".txt")
        if not os.path.exists(path):
            return None
        text = open(path, "rb").read().decode("utf-8")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if lines and all(line.endswith("\r") for line in lines):
            lines = [line[:-1] for line in lines]
        tokens = lines
    if unk not in tokens:
        tokens = tokens + [unk]
    return tokens


def write_vocabulary(model_dir, name, tokens, as_json):
    if as_json:
        with open(os.path.join(model_dir, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(tokens, f, indent=2)
    else:
        with open(os.path.join(model_dir, name + ".txt"), "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in tokens))


def dequantize(variables, name):
    """A weight as float64: float types widened; int8 and int16 divided by
    "<name>_scale" (per row or one for all; int16 files without one: 1000,
    CTranslate2's global int16 scale)."""
    value = variables[name]
    if isinstance(value, BFloat16):
        return value.to_float().astype(np.float64)
    if value.dtype in (np.int8, np.int16):
        scale = variables.get(name + "_scale")
        scale = np.float64(1000.0) if scale is None else np.asarray(
            scale.to_float() if isinstance(scale, BFloat16) else scale, dtype=np.float64)
        if scale.ndim == 1:
            scale = scale[:, None]
        return value.astype(np.float64) / scale
    return value.astype(np.float64)
