#!/usr/bin/python3
"""Reference files for reading weights in every format fixres reads, from Python torch.

make OUTDIR      resnet_tiny weights (random, seeded) in FixRes's layout {'model': {'module.' + k:
                 v}} as a torch.save zip file (tiny.pth), the same object as a legacy pre-1.6
                 torch.save file (tiny_legacy.pth) and the state dict as a safetensors file
                 (tiny.safetensors); the model's own outputs on inputs (expected.pth); tensors of
                 every dtype, views and shapes in the three formats (dtypes.*); a legacy file
                 with a storage view (view_legacy.pth) and Python's reading of it (view.pth);
                 damaged files for the error tests (bad_*).
convert SRC.pth LEGACY.pth SAFETENSORS
                 the state dict of SRC.pth (bare or under 'model') in the legacy torch.save format
                 and as a safetensors file.

There is no safetensors package for this Python: safetensors files are written here from the
format's specification (github.com/huggingface/safetensors: an 8-byte little-endian header
length N, N bytes of JSON {name: {dtype, shape, data_offsets}, __metadata__}, then the bytes
of the tensors one after the other), with json, struct and the tensors' raw bytes.
"""
import collections
import io
import json
import os
import pickle
import struct
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_reference import TinyResNet, forward_with_embedding, randomize  # noqa: E402

SAFETENSORS_DTYPES = {
    torch.bool: "BOOL", torch.uint8: "U8", torch.int8: "I8", torch.int16: "I16",
    torch.int32: "I32", torch.int64: "I64", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.float32: "F32", torch.float64: "F64",
}


def raw_bytes(t):
    """The tensor's elements, row-major, little-endian (this machine's order)."""
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def safetensors_bytes(tensors, metadata=None, edit=None):
    """A safetensors file of `tensors` (name -> tensor, in this order). `edit(header)` may change
    the header dict before it is written (for damaged files)."""
    header, data = {}, b""
    for name, t in tensors.items():
        b = raw_bytes(t)
        header[name] = {"dtype": SAFETENSORS_DTYPES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [len(data), len(data) + len(b)]}
        data += b
    if metadata:
        header["__metadata__"] = metadata
    if edit:
        edit(header)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the library pads the header with spaces to 8 bytes
    return struct.pack("<Q", len(text)) + text + data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def legacy_save(obj, path):
    torch.save(obj, path, _use_new_zipfile_serialization=False)


class SkimTensors(pickle.Unpickler):
    """Reads the pickle of a legacy torch.save file without its tensors (to find what follows)."""

    def find_class(self, module, name):
        if module.startswith("torch"):
            return lambda *args, **kwargs: None
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return None


class _StorageMarker:
    pass


class _TensorOnView:
    """Pickles as a tensor (offset 1, size 3) on a storage view; see legacy_view_bytes."""

    def __reduce__(self):
        return (torch._utils._rebuild_tensor_v2,
                (_StorageMarker(), 1, (3,), (1,), False, collections.OrderedDict()))


class _ViewPickler(pickle.Pickler):
    def persistent_id(self, obj):
        if isinstance(obj, _StorageMarker):  # elements 2..6 of the 10-element storage 'root'
            return ("storage", torch.FloatStorage, "root", "cpu", 10, ("view", 2, 5))
        return None


def legacy_view_bytes():
    """A legacy stream whose tensor lies on a storage view (persistent id with view metadata),
    as PyTorch before 0.4 could write; current torch.save no longer makes views, so the stream is
    written here pickle by pickle (torch/serialization.py's _legacy_save layout)."""
    from torch.serialization import MAGIC_NUMBER, PROTOCOL_VERSION
    b = io.BytesIO()
    for x in (MAGIC_NUMBER, PROTOCOL_VERSION,
              {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
               "type_sizes": {"short": 2, "int": 4, "long": 8}}):
        pickle.dump(x, b, protocol=2)
    _ViewPickler(b, protocol=2).dump({"v": _TensorOnView()})
    pickle.dump(["root"], b, protocol=2)
    b.write(struct.pack("<q", 10) + raw_bytes(torch.arange(10, dtype=torch.float32)))
    return b.getvalue()


def make(out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    model = TinyResNet()
    randomize(model, gen)
    sd = model.state_dict()
    fixres = collections.OrderedDict(("module." + k, v) for k, v in sd.items())
    # A long list besides the weights: the pickles outgrow the legacy reader's first read.
    obj = {"model": fixres, "epoch": 7, "history": [float(k) / 3 for k in range(30000)]}
    torch.save(obj, f"{out}/tiny.pth")
    legacy_save(obj, f"{out}/tiny_legacy.pth")
    write(f"{out}/tiny.safetensors", safetensors_bytes(fixres, {"format": "pt"}))

    model.eval()
    x = torch.randn(2, 3, 32, 40, generator=gen)
    with torch.no_grad():
        logits, emb = forward_with_embedding(model, x)
        assert torch.equal(logits, model(x))
    torch.save({"x": x, "logits": logits, "embedding": emb}, f"{out}/expected.pth")

    # Every dtype; a 0-d tensor, an empty one; in torch.save files also views sharing a storage.
    dense = collections.OrderedDict([
        ("f32", torch.randn(3, 4, generator=gen)),
        ("f64", torch.randn(5, generator=gen, dtype=torch.float64)),
        ("f16", torch.randn(2, 3, generator=gen).half()),
        ("bf16", torch.randn(7, generator=gen).bfloat16()),
        ("i64", torch.tensor([-(2**40), 0, 2**40 + 3])),
        ("i32", torch.tensor([[-5, 6], [7, -(2**31)]], dtype=torch.int32)),
        ("i16", torch.tensor([-300, 300], dtype=torch.int16)),
        ("i8", torch.tensor([-128, 127, 0], dtype=torch.int8)),
        ("u8", torch.tensor([0, 255, 7], dtype=torch.uint8)),
        ("bool", torch.tensor([True, False, True])),
        ("scalar", torch.tensor(2.5)),
        ("empty", torch.zeros(0, 3)),
    ])
    write(f"{out}/dtypes.safetensors", safetensors_bytes(dense, {"format": "pt", "note": "dtypes"}))
    base = torch.arange(24, dtype=torch.float32)
    views = collections.OrderedDict(dense)
    views["base"] = base
    views["slice"] = base[5:11]
    views["strided"] = base.view(4, 6)[:, ::2]
    views["transposed"] = base.view(4, 6).t()
    torch.save(views, f"{out}/dtypes.pth")
    legacy_save(views, f"{out}/dtypes_legacy.pth")
    write(f"{out}/view_legacy.pth", legacy_view_bytes())
    torch.save(torch.load(f"{out}/view_legacy.pth"), f"{out}/view.pth")  # as Python reads it

    # Damaged safetensors files (each refused with a message naming the problem).
    small = collections.OrderedDict([("a", torch.ones(2, 2)), ("b", torch.zeros(3))])

    def offsets_out_of_range(h):
        h["b"]["data_offsets"] = [16, 16 + 12 + 400]

    def bad_dtype(h):
        h["a"]["dtype"] = "F7"

    def size_mismatch(h):
        h["a"]["shape"] = [2, 3]

    def overlap(h):
        h["b"]["data_offsets"] = [4, 16]

    def huge_shape(h):
        h["a"]["shape"] = [2**62, 2**62]

    def negative_size(h):
        h["a"]["shape"] = [-2, -2]

    def bad_metadata(h):
        h["__metadata__"] = {"format": 3}

    for name, edit in [("offsets", offsets_out_of_range), ("dtype", bad_dtype),
                       ("size", size_mismatch), ("overlap", overlap), ("overflow", huge_shape),
                       ("negative", negative_size), ("metadata", bad_metadata)]:
        write(f"{out}/bad_{name}.safetensors", safetensors_bytes(small, edit=edit))
    good = safetensors_bytes(small)
    n = struct.unpack("<Q", good[:8])[0]
    write(f"{out}/bad_length.safetensors", struct.pack("<Q", len(good) + 100) + good[8:])
    write(f"{out}/bad_json.safetensors", good[:8] + b"{\"a\": [1, 2" + b" " * (n - 11) + good[8 + n:])
    write(f"{out}/bad_truncated.safetensors", good[:-5])
    write(f"{out}/bad_trailing.safetensors", good + b"\0\0\0\0")
    # A legacy file saved on a big-endian machine (sys_info's little_endian flipped to False).
    data = bytearray(open(f"{out}/dtypes_legacy.pth", "rb").read())
    flag = data.index(b"\x88", data.index(b"little_endian"))  # NEWTRUE
    data[flag] = 0x89  # NEWFALSE
    write(f"{out}/bad_big_endian.pth", bytes(data))
    # A legacy file whose first storage's element count is one too many.
    with open(f"{out}/dtypes_legacy.pth", "rb") as f:
        for _ in range(3):
            pickle.load(f)
        SkimTensors(f).load()
        pickle.load(f)
        section = f.tell()
    count = struct.unpack_from("<Q", data, section)[0]
    data = bytearray(open(f"{out}/dtypes_legacy.pth", "rb").read())
    struct.pack_into("<Q", data, section, count + 1)
    write(f"{out}/bad_count.pth", bytes(data))
    print("weight format files written to", out)


def convert(src, legacy, safetensors):
    sd = torch.load(src, map_location="cpu")
    sd = sd.get("model", sd)
    legacy_save(sd, legacy)
    write(safetensors, safetensors_bytes(sd))


if __name__ == "__main__":
    torch.set_num_threads(1)
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(sys.argv[2])
    elif len(sys.argv) == 5 and sys.argv[1] == "convert":
        convert(*sys.argv[2:])
    else:
        sys.exit(__doc__)
