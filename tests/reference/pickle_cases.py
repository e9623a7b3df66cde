#!/usr/bin/python3
"""Reference pickles for the Unpickler (JSON on stdout), made by Python's own pickle module:

- "opcodes": {name: byte} for every opcode of pickletools (protocols 0-5);
- "cases": values pickled with each protocol, {"name", "protocol", "pickle": hex, "canon"}, where
  canon is the value in a form the C++ test rebuilds from the IValue it reads (see canon());
- "errors": {"name", "pickle": hex, "message": a fragment of the expected WeightsError};
- "ignored": an object of an unsupported class, {"pickle": hex, "canon", "classes"};
- "tensors": data.pkl of a torch.save file, {"pickle": hex, "storages": [[key, dtype, numel,
  location]], "tensors": {name: [storage key, offset, sizes, strides]}}.
"""
import argparse, collections, io, json, pickle, pickletools, struct, zipfile
import numpy as np
import torch


def canon(x):
    """N; b:0/1; i:<int>; f:<hex of the IEEE double bits>; s:<hex of the bytes (str as UTF-8)>;
    [a,b] for lists and sets; (a,b) for tuples; {k=v,...} for dicts, in iteration order."""
    if x is None:
        return "N"
    if isinstance(x, (bool, np.bool_)):
        return "b:%d" % int(x)
    if isinstance(x, (int, np.integer)):
        return "i:%d" % int(x)
    if isinstance(x, (float, np.floating)):
        return "f:%016x" % struct.unpack("<Q", struct.pack("<d", float(x)))[0]
    if isinstance(x, str):
        return "s:" + x.encode().hex()
    if isinstance(x, bytes):
        return "s:" + x.hex()
    if isinstance(x, (list, set, frozenset)):
        return "[" + ",".join(canon(v) for v in x) + "]"
    if isinstance(x, tuple):
        return "(" + ",".join(canon(v) for v in x) + ")"
    if isinstance(x, dict):
        return "{" + ",".join(canon(k) + "=" + canon(v) for k, v in x.items()) + "}"
    raise TypeError(type(x))


# Text-only protocol 0 writes str as UNICODE, which torch.save never uses: no str there.
numbers = {1: [0, 1, 255, 256, 65535, 65536, -1, -2**31, 2**31 - 1, 2**31, 2**40, -2**40, 2**63 - 1, -2**63],
           2: (1.5, -0.25, 0.0, 1e300, None, True, False), 3: {4: [5, (6,)]}, 7: []}
mixed = {"ints": numbers[1], "floats": numbers[2], "str": "x\u00e9\u4e2d", "empty": "",
         "bytes": b"\x00\x01\xff", "long_str": "y" * 300, "nested": {"a": {"b": [1, [2, [3]]]}},
         "tuples": ((), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)), "set": {3, 1, 2},
         "frozen": frozenset({7}), "od": collections.OrderedDict([("z", 1), ("a", 2)]),
         "shared": None, "big_list": list(range(2500)), "big_dict": {i: i for i in range(1100)},
         "np": [np.float64(0.625), np.float32(0.5), np.int64(-12345678901), np.int32(-7),
                np.uint32(4000000000), np.bool_(True)]}
shared = [1, 2]
mixed["shared"] = (shared, shared)

cases = [{"name": "numbers", "protocol": 0, "pickle": pickle.dumps(numbers, protocol=0).hex(),
          "canon": canon(numbers)}]
for proto in range(1, 6):
    cases.append({"name": "mixed", "protocol": proto, "pickle": pickle.dumps(mixed, protocol=proto).hex(),
                  "canon": canon(mixed)})

good = pickle.dumps({"a": [1, 2, 3]}, protocol=2)
errors = [
    {"name": "truncated", "pickle": good[: len(good) // 2].hex(), "message": "data.pkl is truncated"},
    {"name": "empty", "pickle": "", "message": "data.pkl is truncated"},
    {"name": "unknown opcode", "pickle": (b"\x80\x02\xff.").hex(),
     "message": "unsupported pickle opcode 0xff at offset 2 in data.pkl"},
    {"name": "protocol 5 buffer", "pickle": pickle.dumps(bytearray(b"ab"), protocol=5).hex(),
     "message": "unsupported pickle opcode 0x96"},
    {"name": "text str", "pickle": pickle.dumps("a", protocol=0).hex(), "message": "unsupported pickle opcode 0x56"},
    {"name": "huge int", "pickle": pickle.dumps(2**64, protocol=2).hex(), "message": "integer of 9 bytes"},
    {"name": "bad text int", "pickle": (b"Iabc\n.").hex(), "message": "malformed data.pkl"},
    {"name": "stack underflow", "pickle": (b"\x80\x020.").hex(), "message": "stack underflow"},
    {"name": "two values", "pickle": (b"\x80\x02NN.").hex(), "message": "2 values left at STOP"},
    {"name": "memo", "pickle": (b"\x80\x02h\x05.").hex(), "message": "memo key 5 unset"},
    {"name": "self-holding list", "pickle": (b"\x80\x02]q\x00h\x00a.").hex(), "message": "nests too deeply"},
    {"name": "None key", "pickle": pickle.dumps({None: 1}, protocol=2).hex(),
     "message": "unsupported dict key of type None"},
    {"name": "persistent id", "pickle": (b"\x80\x02X\x01\x00\x00\x00aQ.").hex(),
     "message": "unsupported persistent id in data.pkl"},
]

namespace = argparse.Namespace(lr=0.1)
ignored_value = {"args": namespace, "epoch": 3}
ignored = {"pickle": pickle.dumps(ignored_value, protocol=2).hex(), "canon": canon({"args": None, "epoch": 3}),
           "classes": ["argparse.Namespace"]}

base = torch.arange(10, dtype=torch.float16)
state = collections.OrderedDict([("w", torch.ones(2, 3, dtype=torch.float64)), ("base", base),
                                 ("view", base[2:8].view(2, 3)[:, 1:]), ("empty", torch.zeros(0, 4))])
buf = io.BytesIO()
torch.save(state, buf)
with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
    data_pkl = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])

class Recorder(pickle.Unpickler):
    """Python's own reading of the persistent ids: [key, storage class, numel, location]."""
    def __init__(self, data):
        super().__init__(io.BytesIO(data))
        self.storages, self.made = [], {}

    def persistent_load(self, pid):
        _, storage_type, key, location, numel = pid
        if key not in self.made:
            self.storages.append([key, storage_type.__name__, numel, location])
            self.made[key] = storage_type(numel)
        return self.made[key]


recorder = Recorder(data_pkl)
loaded = recorder.load()
key_of = {s.data_ptr(): k for k, s in recorder.made.items() if len(s)}
tensors = {name: [key_of.get(t.storage().data_ptr(), ""), t.storage_offset(), list(t.shape), list(t.stride())]
           for name, t in loaded.items()}
tensor_case = {"pickle": data_pkl.hex(), "storages": recorder.storages, "tensors": tensors}

print(json.dumps({"opcodes": {op.name: op.code.encode("latin1")[0] for op in pickletools.opcodes},
                  "cases": cases, "errors": errors, "ignored": ignored, "tensors": tensor_case}))
