#!/usr/bin/python3
"""Prints torchvision's ImageFolder extensions (IMG_EXTENSIONS): lower case, without the dot,
sorted, on one line."""
from torchvision.datasets.folder import IMG_EXTENSIONS

print(" ".join(sorted(e.lstrip(".").lower() for e in IMG_EXTENSIONS)))
