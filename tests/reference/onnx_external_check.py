#!/usr/bin/env python3
"""An ONNX export with external data equals the same export inline.

Usage: onnx_external_check.py INLINE.onnx EXTERNAL.onnx

ONNX's own package reads EXTERNAL.onnx with its tensors from the file its external_data entries
name (a location relative to the model), and those tensors must equal INLINE.onnx's bit for bit,
in the same order, with the same names, nodes and metadata; every tensor of 1 KiB or more must be
external (data_location EXTERNAL, offsets aligned to 4 KiB, the file holding each whole) and the
checker must pass on the path (the form that follows external data).
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

inline_path, external_path = sys.argv[1], sys.argv[2]
inline = onnx.load(inline_path)
bare = onnx.load(external_path, load_external_data=False)
full = onnx.load(external_path)
ia, ib = inline.graph.initializer, full.graph.initializer
assert [t.name for t in ia] == [t.name for t in ib], "initializer names or order differ"
for a, b in zip(ia, ib):
    x, y = numpy_helper.to_array(a), numpy_helper.to_array(b)
    assert x.dtype == y.dtype and x.shape == y.shape, a.name
    assert np.array_equal(x.view(np.uint8), y.view(np.uint8)), a.name
assert [n.SerializeToString() for n in inline.graph.node] == [n.SerializeToString() for n in full.graph.node]
assert {p.key: p.value for p in inline.metadata_props} == {p.key: p.value for p in full.metadata_props}
external = 0
folder = os.path.dirname(os.path.abspath(external_path))
for t, a in zip(bare.graph.initializer, ia):
    big = len(a.raw_data) >= 1024
    assert (t.data_location == onnx.TensorProto.EXTERNAL) == big, (t.name, len(a.raw_data))
    if not big:
        continue
    entries = {e.key: e.value for e in t.external_data}
    assert not os.path.isabs(entries["location"]), entries
    offset, length = int(entries["offset"]), int(entries["length"])
    assert offset % 4096 == 0 and length == len(a.raw_data), (t.name, entries)
    assert offset + length <= os.path.getsize(os.path.join(folder, entries["location"])), entries
    external += 1
onnx.checker.check_model(external_path)
print(f"ok: {external} of {len(ia)} tensors external, equal to the inline export")
