#!/usr/bin/python3
"""Reference decodes of the image formats besides JPEG and PNG (BMP, WebP, TIFF, PBM/PGM/PPM,
which ImageFolder lists, and GIF's first frame), computed with PIL: Image.open(f).convert("RGB").

Usage: image_formats.py OUT_DIR
Writes the images (written by PIL where it can write them, by hand for the layouts it cannot)
and OUT_DIR/manifest.txt with one case per line:
  decode IMG EXPECTED W H      PIL decodes IMG to the raw uint8 HWC RGB bytes in EXPECTED
  decode_error IMG             PIL fails to open or load IMG
The first line is `pil VERSION`. Needs PIL and numpy only (no torch).
"""
import io
import os
import struct
import sys

import numpy as np
import PIL
from PIL import Image, features

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(4321)
names = []


def photo(w, h):
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.zeros((h, w, 3), np.float32)
    for c in range(3):
        for _ in range(3):
            fx, fy, ph = rng.uniform(0.01, 0.1), rng.uniform(0.01, 0.1), rng.uniform(0, 6.3)
            img[..., c] += np.sin(xx * fx + yy * fy + ph)
    img = (img - img.min()) / (np.ptp(img) + 1e-6) * 255
    img += rng.normal(0, 15, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def save(name, image, **kw):
    image.save(os.path.join(out, name), **kw)
    names.append(name)


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
    names.append(name)


def read(name):
    with open(os.path.join(out, name), "rb") as f:
        return f.read()


alpha = lambda w, h: rng.integers(0, 256, (h, w), dtype=np.uint8)

# ---- BMP: 24-bit (odd width: padded rows), 32-bit with alpha, 8-bit palette and gray, 1-bit,
# a top-down file (negative height) and 16-bit 5-6-5 bit fields.
save("rgb24.bmp", Image.fromarray(photo(101, 67)))
save("rgba32.bmp", Image.fromarray(np.dstack([photo(40, 30), alpha(40, 30)]), "RGBA"))
save("pal8.bmp", Image.fromarray(photo(90, 70)).convert("P", palette=Image.ADAPTIVE, colors=50))
save("gray8.bmp", Image.fromarray(photo(45, 61)[..., 0]))
save("bits1.bmp", Image.fromarray(photo(37, 29)[..., 1]).convert("1"))
b = bytearray(read("rgb24.bmp"))
w, h = struct.unpack_from("<ii", b, 18)
rows = [bytes(b[54 + r * ((w * 3 + 3) // 4 * 4):54 + (r + 1) * ((w * 3 + 3) // 4 * 4)]) for r in range(h)]
struct.pack_into("<i", b, 22, -h)
write("topdown.bmp", bytes(b[:54]) + b"".join(reversed(rows)))
px = photo(23, 17).astype(np.uint16)
v565 = ((px[..., 0] >> 3) << 11) | ((px[..., 1] >> 2) << 5) | (px[..., 2] >> 3)
row_bytes = (23 * 2 + 3) // 4 * 4
pixels = b"".join(v565[r].astype("<u2").tobytes().ljust(row_bytes, b"\0") for r in range(16, -1, -1))
header = struct.pack("<IiiHHIIiiII", 40, 23, 17, 1, 16, 3, len(pixels), 2835, 2835, 0, 0)
masks = struct.pack("<III", 0xF800, 0x07E0, 0x001F)
write("truncated.bmp", read("rgb24.bmp")[:4000])
# Run-length encoded BMPs (BI_RLE8, BI_RLE4), written by hand: runs (one clipped at the row's end),
# absolute runs (odd lengths, so the word alignment and RLE4's dropped last pixel count), end of
# line, end of bitmap; a gray-ramp palette (Pillow's mode L: an index past it is its gray
# level), a top-down file, and data ending before the last pixel. (No delta escape: Pillow 9.4
# reads two bytes too many there; DecodeSafetyTest checks it against the specification.)
def rle_bmp(name, width, height, bits, compression, palette, rle, colors=None):
    colors = colors or len(palette) // 4
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, compression, len(rle), 2835, 2835, colors, 0)
    offset = 14 + 40 + len(palette)
    write(name, b"BM" + struct.pack("<IHHI", offset + len(rle), 0, 0, offset) + header + palette + rle)
colour = b"".join(bytes([(i * 60) % 256, (i * 30 + 7) % 256, (i * 10 + 100) % 256, 0]) for i in range(256))
rle_bmp("rle8.bmp", 5, 3, 8, 1, colour, bytes([9, 1, 0, 0, 2, 2, 0, 3, 3, 4, 5, 0, 0, 0, 5, 200, 0, 1]))
rle_bmp("rle8_topdown.bmp", 4, -2, 8, 1, colour, bytes([2, 7, 2, 9, 0, 0, 0, 4, 1, 2, 3, 4, 0, 1]))
gray_ramp = b"".join(bytes([i, i, i, 0]) for i in range(16))
rle_bmp("rle8_grayramp.bmp", 4, 2, 8, 1, gray_ramp, bytes([4, 3, 0, 0, 2, 200, 2, 15, 0, 1]))
rle_bmp("rle4.bmp", 7, 3, 4, 2, colour[:64], bytes([7, 0x1E, 0, 0, 0, 5, 0x23, 0x45, 0x60, 0, 3, 0x7F, 0, 0, 8, 0xAB, 0, 1]))
rle_bmp("rle8_truncated.bmp", 4, 4, 8, 1, colour, bytes([4, 1, 0, 0, 4, 2]))
# 300 palette entries declared: a file holding 20 of them (the RLE data read as further entries,
# 23 in all) is read by Pillow 9.4 and 12; one holding all 300 is refused ("invalid palette size").
rle_bmp("rle8_short_palette.bmp", 5, 3, 8, 1, colour[:80], bytes([5, 1, 0, 0, 3, 7, 2, 19, 0, 0, 5, 4, 0, 1]), colors=300)
rle_bmp("rle8_palette300.bmp", 5, 3, 8, 1, colour + colour[:176], bytes([5, 1, 0, 0, 3, 7, 2, 255, 0, 0, 5, 4, 0, 1]), colors=300)
write("rgb565.bmp", b"BM" + struct.pack("<IHHI", 14 + 40 + 12 + len(pixels), 0, 0, 14 + 40 + 12) + header + masks + pixels)

# ---- WebP: lossy and lossless, with and without alpha, an animation (its first frame is read).
if features.check("webp"):
    save("lossy.webp", Image.fromarray(photo(120, 85)), quality=80)
    save("lossless.webp", Image.fromarray(photo(64, 50)), lossless=True)
    save("lossy_alpha.webp", Image.fromarray(np.dstack([photo(70, 44), alpha(70, 44)]), "RGBA"), quality=70)
    save("lossless_alpha.webp", Image.fromarray(np.dstack([photo(33, 47), alpha(33, 47)]), "RGBA"), lossless=True)
    frames = [Image.fromarray(photo(48, 36)) for _ in range(3)]
    frames[0].save(os.path.join(out, "anim.webp"), save_all=True, append_images=frames[1:], duration=100)
    names.append("anim.webp")
    # Only the canvas header: a truncated file.
    write("truncated.webp", read("lossy.webp")[:200])

# ---- TIFF: uncompressed, LZW, Deflate, JPEG; RGB, RGBA, gray, palette, 1-bit, CMYK, 16-bit gray;
# a grayscale file whose zero is white.
save("raw.tif", Image.fromarray(photo(83, 59)))
save("lzw.tiff", Image.fromarray(photo(64, 96)), compression="tiff_lzw")
save("deflate.tif", Image.fromarray(photo(51, 40)), compression="tiff_adobe_deflate")
save("jpeg.tif", Image.fromarray(photo(80, 64)), compression="jpeg")
save("rgba.tif", Image.fromarray(np.dstack([photo(30, 20), alpha(30, 20)]), "RGBA"))
save("gray.tif", Image.fromarray(photo(45, 33)[..., 2]))
save("pal.tif", Image.fromarray(photo(60, 40)).convert("P", palette=Image.ADAPTIVE, colors=20))
save("bits1.tif", Image.fromarray(photo(41, 27)[..., 0]).convert("1"))
save("bits1_g4.tif", Image.fromarray(photo(64, 32)[..., 0]).convert("1"), compression="group4")
save("cmyk.tif", Image.fromarray(photo(36, 28)).convert("CMYK"))
save("gray16.tif", Image.fromarray(rng.integers(0, 1024, (21, 31)).astype(np.uint16)))
# PhotometricInterpretation 0 (white is zero): rewrite the tag of an uncompressed gray file.
t = bytearray(read("gray.tif"))
ifd = struct.unpack_from("<I", t, 4)[0]
for i in range(struct.unpack_from("<H", t, ifd)[0]):
    tag, typ, count, value = struct.unpack_from("<HHIH", t, ifd + 2 + 12 * i)
    if tag == 262:
        struct.pack_into("<H", t, ifd + 2 + 12 * i + 8, 0)
write("miniswhite.tif", bytes(t))
# A palette TIFF without its ColorMap (tag 320 renamed to a private tag): Pillow refuses it.
b = io.BytesIO()
Image.fromarray(photo(21, 13)).convert("P", palette=Image.ADAPTIVE, colors=20).save(b, "TIFF")
t = bytearray(b.getvalue())
ifd = struct.unpack_from("<I", t, 4)[0]
for i in range(struct.unpack_from("<H", t, ifd)[0]):
    if struct.unpack_from("<H", t, ifd + 2 + 12 * i)[0] == 320:
        struct.pack_into("<H", t, ifd + 2 + 12 * i, 65000)
write("nocolormap.tif", bytes(t))
write("truncated.tif", read("raw.tif")[:5000])

# ---- PNM: binary and plain, maxval 255, scaled (below 255, 16-bit), 16-bit gray (mode I).
save("rgb.ppm", Image.fromarray(photo(57, 43)))
save("gray.pgm", Image.fromarray(photo(39, 52)[..., 1]))
save("bits.pbm", Image.fromarray(photo(35, 21)[..., 0]).convert("1"))
g = rng.integers(0, 101, (13, 17)).astype(np.uint8)
write("max100.pgm", b"P5\n# a comment\n17 13\n100\n" + g.tobytes())
c = rng.integers(0, 1001, (11, 9, 3)).astype(">u2")
write("max1000.ppm", b"P6 9 11 1000\n" + c.tobytes())
g16 = rng.integers(0, 400, (10, 12)).astype(">u2")
write("max65535.pgm", b"P5\n12 10\n65535\n" + g16.tobytes())
g12 = rng.integers(0, 4096, (8, 6)).astype(">u2")
write("max4095.pgm", b"P5\n6 8\n4095\n" + g12.tobytes())
plain = rng.integers(0, 16, (5, 7, 3))
write("plain.ppm", b"P3\n# plain\n7 5\n15\n" + "\n".join(" ".join(str(v) for v in r.ravel()) for r in plain).encode() + b"\n")
pg = rng.integers(0, 256, (6, 4))
write("plain.pgm", b"P2 4 6 255\n" + b"\n".join(b" ".join(b"%d" % v for v in r) for r in pg) + b"\n")
pb = rng.integers(0, 2, (5, 9))
write("plain.pbm", b"P1\n9 5\n" + b"\n".join(b"".join(b"%d" % v for v in r) for r in pb) + b"\n")
write("truncated.ppm", read("rgb.ppm")[:3000])
write("toolarge.pgm", b"P2 2 2 10\n1 2 3 11\n")
write("badmaxval.ppm", b"P6 2 2 70000\n" + b"\0" * 24)

# ---- GIF: PIL's own files (interlaced by default, flat, greyscale, a 4-colour table, the first
# frame of an animation) and hand-made ones for what PIL does not write: a frame inside a larger
# screen with a transparent index, a frame that grows the screen, indices past the colour table,
# no colour table at all; a truncated file and a stream that ends early.
def lzw(indices, min_size):
    clear, end = 1 << min_size, (1 << min_size) + 1
    size, table, nxt = min_size + 1, {bytes([i]): i for i in range(clear)}, end + 1
    codes, w = [(clear, size)], b""
    for k in indices:
        if w + bytes([k]) in table:
            w += bytes([k])
            continue
        codes.append((table[w], size))
        table[w + bytes([k])], nxt = nxt, nxt + 1
        if nxt > (1 << size) and size < 12:
            size += 1
        if nxt >= 4095:
            codes.append((clear, size))
            size, table, nxt = min_size + 1, {bytes([i]): i for i in range(clear)}, end + 1
        w = bytes([k])
    codes += [(table[w], size), (end, size)]
    acc = nbits = 0
    data = bytearray()
    for code, bits in codes:
        acc |= code << nbits
        nbits += bits
        while nbits >= 8:
            data.append(acc & 255)
            acc >>= 8
            nbits -= 8
    if nbits:
        data.append(acc & 255)
    blocks = b"".join(bytes([len(data[i:i + 255])]) + bytes(data[i:i + 255]) for i in range(0, len(data), 255))
    return bytes([min_size]) + blocks + b"\0"


def gif(screen, frame, indices, table=None, table_bits=0, transparent=None, min_size=None):
    sw, sh = screen
    x, y, w, h = frame
    flags = (0x80 | table_bits) if table is not None else 0
    head = b"GIF89a" + struct.pack("<HHBBB", sw, sh, flags, 0, 0)
    if table is not None:
        head += bytes(table) + b"\0" * (3 * (2 << table_bits) - len(table))
    if transparent is not None:
        head += b"\x21\xf9\x04" + bytes([1, 0, 0, transparent, 0])
    head += b"," + struct.pack("<HHHHB", x, y, w, h, 0)
    return head + lzw(indices, min_size or max(2, table_bits + 1)) + b";"


pal = photo(64, 48)
save("photo.gif", Image.fromarray(pal).quantize(200))
save("flat.gif", Image.fromarray(photo(33, 20)).quantize(64), interlace=False)
save("gray.gif", Image.fromarray(photo(30, 17)[..., 0]))
save("p4.gif", Image.fromarray(rng.integers(0, 4, (9, 11), dtype=np.uint8), "P"), palette=[0, 0, 0, 250, 0, 0, 0, 250, 0, 0, 0, 250])
frames = [Image.fromarray(photo(24, 18)).quantize(32) for _ in range(2)]
frames[0].save(os.path.join(out, "animated.gif"), save_all=True, append_images=frames[1:])
names.append("animated.gif")
colours = [0, 0, 0, 200, 30, 30, 30, 200, 30, 30, 30, 200]
write("offset.gif", gif((20, 16), (3, 4, 10, 8), rng.integers(0, 4, 80), colours, 1, transparent=2))
write("grow.gif", gif((8, 8), (4, 2, 10, 9), rng.integers(0, 4, 90), colours, 1))
write("beyond.gif", gif((7, 6), (0, 0, 7, 6), rng.integers(0, 8, 42), [9, 99, 199, 255, 0, 0], 0, min_size=3))
write("notable.gif", gif((6, 5), (0, 0, 6, 5), rng.integers(0, 16, 30), min_size=4))
write("greytable.gif", gif((6, 5), (0, 0, 6, 5), rng.integers(0, 16, 30), [0, 0, 0, 1, 1, 1], 0, min_size=4))
write("truncated.gif", read("photo.gif")[: len(read("photo.gif")) // 2])
early = gif((6, 6), (0, 0, 6, 6), rng.integers(0, 4, 18), colours, 1)
write("early_end.gif", early)
# A frame 0 pixels wide (a 0x16 frame, with one stray code) and a file cut inside the data block
# that ends the frame (every pixel decodable): both refused by Pillow 9.4 and 12.
write("empty_frame.gif", gif((6, 16), (0, 0, 0, 16), [1], colours, 1))
write("cut_block.gif", gif((40, 40), (0, 0, 40, 40), rng.integers(0, 4, 1600), colours, 1)[:-5])

manifest = [f"pil {PIL.__version__}"]
# Indices past a GIF's colour table: black in Pillow 12 (what fixres reads), grey in Pillow 9.4.
if int(PIL.__version__.split(".")[0]) < 10:
    names.remove("beyond.gif")
    manifest.append("unchecked beyond.gif")
for name in names:
    try:
        im = Image.open(os.path.join(out, name))
        im.load()
        rgb = np.array(im.convert("RGB"))
    except Exception:
        manifest.append(f"decode_error {name}")
        continue
    with open(os.path.join(out, name + ".rgb"), "wb") as f:
        f.write(np.ascontiguousarray(rgb).tobytes())
    manifest.append(f"decode {name} {name}.rgb {rgb.shape[1]} {rgb.shape[0]}")
with open(os.path.join(out, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
