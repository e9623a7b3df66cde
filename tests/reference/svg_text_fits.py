#!/usr/bin/python3
"""Every text of an SVG chart lies inside the picture, its width measured with a real font
(DejaVu Sans, what a browser's sans-serif is on Debian) at its font size: a start-anchored text
ends before the right edge, an end-anchored one starts after the left edge, a middle-anchored one
fits on both sides. Rotated texts (the y axis's title) are left out. Prints the texts that do not fit and exits 1.
Usage: svg_text_fits.py FILE.svg...   (exit 77 when the font is not installed)"""
import html, os, re, sys
from PIL import ImageFont

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
if not os.path.exists(FONT):
    print("no DejaVu Sans font (fonts-dejavu-core)"); sys.exit(77)

def attr(tag, name, default=None):
    m = re.search(r'\s%s="([^"]*)"' % name, tag)
    return m.group(1) if m else default

bad = 0
for path in sys.argv[1:]:
    svg = open(path, encoding="utf-8").read()
    root = re.match(r"<svg\b[^>]*>", svg).group(0)
    width, base = float(attr(root, "width")), float(attr(root, "font-size", "12"))
    for tag, body in re.findall(r"(<text\b[^>]*>)(.*?)</text>", svg, re.S):
        if attr(tag, "transform"):
            continue
        text = html.unescape(re.sub(r"<[^>]+>", "", body))
        size = float(attr(tag, "font-size", base))
        w = ImageFont.truetype(FONT, round(size)).getlength(text)
        x, anchor = float(attr(tag, "x", "0")), attr(tag, "text-anchor", "start")
        left = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        if left < -0.5 or left + w > width + 0.5:
            print(f"{path}: '{text}' spans {left:.1f}..{left + w:.1f} px, the picture 0..{width:g}")
            bad += 1
sys.exit(1 if bad else 0)
