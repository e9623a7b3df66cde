#!/usr/bin/python3
"""Seed corpora of the fuzz targets (committed under fuzz/corpus/): small valid inputs of each
format, so the fuzzer starts from deep inside the parsers.
Usage: make_corpus.py OUT_DIR"""
import io, os, struct, sys
import numpy as np
import torch
from PIL import Image

out = sys.argv[1]
def put(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f:
        f.write(data)

rng = np.random.default_rng(0)
rgb = Image.fromarray(rng.integers(0, 255, (12, 16, 3), dtype=np.uint8))
def encoded(img, fmt, **kw):
    b = io.BytesIO(); img.save(b, fmt, **kw); return b.getvalue()
put("decode", "rgb.jpg", encoded(rgb, "JPEG", quality=80))
put("decode", "progressive.jpg", encoded(rgb, "JPEG", progressive=True))
put("decode", "gray.jpg", encoded(rgb.convert("L"), "JPEG"))
put("decode", "cmyk.jpg", encoded(rgb.convert("CMYK"), "JPEG"))
put("decode", "rgb.png", encoded(rgb, "PNG"))
put("decode", "rgba.png", encoded(rgb.convert("RGBA"), "PNG"))
put("decode", "palette.png", encoded(rgb.convert("P"), "PNG"))
put("decode", "gray16.png", encoded(Image.fromarray(rng.integers(0, 65535, (8, 8), dtype=np.uint16)), "PNG"))

def saved(obj):
    b = io.BytesIO(); torch.save(obj, b); return b.getvalue()
put("torchfile", "state_dict.pth", saved({"conv.weight": torch.randn(2, 1, 1, 1), "fc.bias": torch.zeros(2)}))
put("torchfile", "fixres_layout.pth", saved({"model": {"module.fc.weight": torch.ones(2, 2)}, "epoch": 3}))
put("torchfile", "mixed.pth", saved({"a": [1, 2.5, "x", None, True], "t": torch.arange(4, dtype=torch.int64),
                                      "h": torch.ones(3, dtype=torch.float16), "v": torch.ones(4)[1:3]}))
# Bare pickles go straight to the unpickler: data.pkl of a torch.save file, and plain values
# with each protocol.
import pickle, zipfile
with zipfile.ZipFile(io.BytesIO(saved({"w": torch.ones(2, 2), "v": torch.arange(6)[1:4]}))) as z:
    put("torchfile", "data.pkl", z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0]))
plain = {"a": [1, -2, 2**40, 2.5, None, True], "b": (b"\x00\xff", "x"), "s": {1, 2}, "f": frozenset({3})}
for proto in range(0, 6):
    put("torchfile", "plain_p%d.pkl" % proto, pickle.dumps(plain if proto else plain["a"], protocol=proto))

# Legacy (pre-1.6) torch.save streams, and safetensors files (written from the format's
# specification: there is no safetensors package here).
def legacy(obj):
    b = io.BytesIO(); torch.save(obj, b, _use_new_zipfile_serialization=False); return b.getvalue()
put("torchfile", "legacy_state_dict.pth", legacy({"conv.weight": torch.randn(2, 1, 1, 1), "fc.bias": torch.zeros(2)}))
base = torch.arange(6.)
put("torchfile", "legacy_views.pth", legacy({"model": {"module.w": base, "module.v": base[1:4],
                                                       "module.t": base.view(2, 3).t()}, "epoch": 3,
                                             "h": torch.ones(2, dtype=torch.float16)}))
import json
def safetensors(tensors, metadata=None):
    header, data = {}, b""
    names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64",
             torch.uint8: "U8", torch.bool: "BOOL"}
    for name, t in tensors.items():
        raw = t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data
put("torchfile", "state_dict.safetensors", safetensors({"conv.weight": torch.randn(2, 1, 1, 1), "fc.bias": torch.zeros(2),
                                                        "n": torch.tensor(3)}, {"format": "pt"}))
put("torchfile", "dtypes.safetensors", safetensors({"h": torch.ones(3, dtype=torch.float16), "b": torch.ones(2, dtype=torch.bfloat16),
                                                    "m": torch.tensor([True, False]), "u": torch.arange(4, dtype=torch.uint8),
                                                    "e": torch.zeros(0, 2)}))

def idx(images, labels):
    n, r, c = images.shape
    a = struct.pack(">BBBBIII", 0, 0, 8, 3, n, r, c) + images.tobytes()
    b = struct.pack(">BBBBI", 0, 0, 8, 1, n) + labels.tobytes()
    return bytes([len(a) // 4]) + a + b if len(a) % 4 == 0 and len(a) // 4 < 256 else None
put("idx", "three_4x4", idx(rng.integers(0, 255, (3, 4, 4), dtype=np.uint8), np.array([0, 1, 2], np.uint8)))
put("idx", "two_6x6", idx(rng.integers(0, 255, (2, 6, 6), dtype=np.uint8), np.array([5, 9], np.uint8)))

def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
put("npy", "f32.npy", npy(rng.standard_normal((3, 4)).astype(np.float32)))
put("npy", "i64.npy", npy(np.arange(5, dtype=np.int64)))
put("npy", "f64_fortran.npy", npy(np.asfortranarray(rng.standard_normal((2, 3)))))
put("npy", "u8_3d.npy", npy(rng.integers(0, 255, (2, 2, 2), dtype=np.uint8)))

import tarfile
def tar(members, fmt=tarfile.USTAR_FORMAT):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, data in members:
            info = tarfile.TarInfo(name); info.size = len(data); t.addfile(info, io.BytesIO(data))
    return b.getvalue()
jpg = encoded(rgb, "JPEG", quality=50)
put("tar", "two_samples.tar", tar([("a/x1.jpg", jpg), ("a/x1.cls", b"3"), ("b/x2.png", encoded(rgb, "PNG")), ("b/x2.cls", b"0")]))
put("tar", "pax_long_name.tar", tar([("d" * 120 + "/img.jpg", jpg), ("d" * 120 + "/img.cls", b"1")], tarfile.PAX_FORMAT))
put("tar", "gnu_missing_cls.tar", tar([("k" * 110 + ".jpg", jpg), ("other.jpg", jpg), ("other.json", b"{}")], tarfile.GNU_FORMAT))

# Image folder indexes (.fixres-index): first byte 0 = the whole file, 1 = the payload alone (the
# target adds a valid header and CRC-32C).
def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF
def index_payload(root, classes, folders, files, left_out):
    s = lambda t: struct.pack("<Q", len(t.encode())) + t.encode()
    out = s(root) + struct.pack("<Q", len(classes)) + b"".join(s(c) for c in classes)
    out += struct.pack("<Q", len(folders))
    out += b"".join(s(p) + struct.pack("<Qqq", ino, m, c) for p, ino, m, c in folders)
    out += struct.pack("<Q", len(files))
    out += b"".join(s(p) + struct.pack("<qQq", label, size, m) for p, label, size, m in files)
    out += b"".join(struct.pack("<q", n) + s(example) for n, example in left_out)
    return out
def index_file(payload):
    return b"FXIDX\0\0\0" + struct.pack("<QQQ", 1, len(payload), crc32c(payload)) + payload
tree = index_payload("/data/train", ["a", "b"], [("a", 11, 1700000000123456789, 1700000000987654321), ("b", 12, 5, 7), ("b/x", 13, 5, 7)],
                     [("a/1.jpg", 0, 1234, 42), ("b/2.png", 1, 99, 43), ("b/x/3.jpeg", 1, 7, 44)], [(2, "a/4.bmp"), (0, "")])
put("index", "tree_file", b"\0" + index_file(tree))
put("index", "tree_payload", b"\1" + tree)
escaping = index_payload("/data/train", ["a"], [("a", 11, 5, 7)], [("a/../../../other/b.jpg", 0, 1, 2)], [(0, ""), (0, "")])
put("index", "escaping_payload", b"\1" + escaping)
put("index", "empty_payload", b"\1" + index_payload("", [], [], [], [(0, ""), (0, "")]))

# One codec each (fuzz_codec.cpp): the encodings Pillow writes, and plain-text PNM written by hand.
small = rgb.resize((9, 7))
put("bmp", "rgb24.bmp", encoded(small, "BMP"))
put("bmp", "palette8.bmp", encoded(small.convert("P"), "BMP"))
put("bmp", "gray.bmp", encoded(small.convert("L"), "BMP"))
put("bmp", "bilevel.bmp", encoded(small.convert("1"), "BMP"))
def rle_bmp(width, height, bits, compression, rle):
    palette = b"".join(bytes([i, 255 - i, (i * 7) % 256, 0]) for i in range(1 << bits))
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, compression, len(rle), 0, 0, 0, 0)
    offset = 14 + 40 + len(palette)
    return b"BM" + struct.pack("<IHHI", offset + len(rle), 0, 0, offset) + header + palette + rle
put("bmp", "rle8.bmp", rle_bmp(5, 3, 8, 1, bytes([9, 1, 0, 0, 2, 2, 0, 3, 3, 4, 5, 0, 0, 2, 1, 1, 2, 9, 0, 1])))
put("bmp", "rle4.bmp", rle_bmp(7, 3, 4, 2, bytes([7, 0x1E, 0, 0, 0, 5, 0x23, 0x45, 0x60, 0, 3, 0x7F, 0, 0, 8, 0xAB, 0, 1])))
put("webp", "lossy.webp", encoded(small, "WEBP", quality=50))
put("webp", "lossless.webp", encoded(small, "WEBP", lossless=True))
put("webp", "alpha.webp", encoded(small.convert("RGBA"), "WEBP", lossless=True))
put("tiff", "raw.tif", encoded(small, "TIFF"))
put("tiff", "lzw.tif", encoded(small, "TIFF", compression="tiff_lzw"))
put("tiff", "deflate_rgba.tif", encoded(small.convert("RGBA"), "TIFF", compression="tiff_adobe_deflate"))
put("tiff", "palette.tif", encoded(small.convert("P"), "TIFF"))
put("tiff", "gray16.tif", encoded(Image.fromarray(rng.integers(0, 65535, (5, 6), dtype=np.uint16)), "TIFF"))
put("tiff", "bilevel_packbits.tif", encoded(small.convert("1"), "TIFF", compression="packbits"))
put("pnm", "p4.pbm", encoded(small.convert("1"), "PPM"))
put("pnm", "p5.pgm", encoded(small.convert("L"), "PPM"))
put("pnm", "p6.ppm", encoded(small, "PPM"))
put("pnm", "p1.pbm", b"P1\n# bits\n3 2\n1 0 1\n0 1 0\n")
put("pnm", "p2.pgm", b"P2\n3 2\n255\n0 128 255\n7 8 9\n")
put("pnm", "p3.ppm", b"P3\n2 1\n65535\n0 1 2 65535 4000 5\n")
put("pnm", "p5_16bit.pgm", b"P5\n2 2\n1000\n" + struct.pack(">4H", 0, 250, 999, 1000))

# --config files (fuzz_config.cpp): first byte even = TOML, odd = INI; bit 1 = `bench train`.
put("config", "predict.toml", b"\0" + b"# predict\ntopk = 3\nlr = 0.5\nout = \"p.csv\"\ninput-size = [224, 288]\ncpu = true\n")
put("config", "sections.toml", b"\2" + b"[predict]\ntopk = 2\n[bench.train]\nlr = 1e-3\ninput_size = \"128,160\"\n")
put("config", "bom.toml", b"\0" + b"\xef\xbb\xbftopk = 1\n")
put("config", "predict.ini", b"\1" + b"; predict\n[predict]\ntopk=4\nout=x.csv\ncpu=true\n")

# Model folders' config.json (fuzz_modelfolder.cpp): fuzz/corpus/modelfolder/ holds files fixres
# wrote (a train run's config.json with its paths replaced, the hub config of
# `export --format timm-hub`, a sweep folder's with fixres.weights, a minimal timm config),
# committed as they are; this script does not make them.
