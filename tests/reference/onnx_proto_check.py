#!/usr/bin/env python3
"""Reads ONNX files written by fixres with ONNX's own Python package (Debian's python3-onnx, on
its protobuf), by other code than fixres's encoder.

onnx_proto_check.py [--json] MODEL...
    For each MODEL: onnx.load parses it; onnx.checker.check_model(full_check=True) accepts it
    (the checker's rules and strict shape inference; skipped, and said, for an opset newer than
    the installed package knows: onnx 1.12 stops at 17); and the protobuf library writes the parsed
    model back to the very same bytes (fixres writes protobuf's canonical encoding: fields in
    ascending number, repeated scalars unpacked as proto2 has them, nothing unknown). Prints
    "ok MODEL (N nodes, M initializers)", or with --json the model as protobuf's JSON mapping
    (google.protobuf.json_format, field names as in onnx.proto, raw data in base64) for a test
    to compare field by field. Exit 1 naming the file on a failure; 77 when the onnx package is
    absent.
"""
import json
import sys

try:
    import onnx
    from google.protobuf import json_format
except ImportError as e:  # pragma: no cover - depends on the machine
    print(f"no onnx package for {sys.executable}: {e}", file=sys.stderr)
    sys.exit(77)

args = sys.argv[1:]
as_json = bool(args) and args[0] == "--json"
if as_json:
    args = args[1:]
failed = 0
for path in args:
    data = open(path, "rb").read()
    note = ""
    try:
        model = onnx.load_from_string(data)
        opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
        if opset <= onnx.defs.onnx_opset_version():
            onnx.checker.check_model(model, full_check=True)
        else:  # the bytes are still parsed and compared below; ONNX Runtime checks the rest
            note = f"; opset {opset} is newer than onnx {onnx.__version__}'s checker"
    except Exception as e:  # the checker's own exception types vary across versions
        print(f"{path}: ONNX refuses it: {e}", file=sys.stderr)
        failed = 1
        continue
    again = model.SerializeToString()
    if again != data:
        at = next((i for i, (a, b) in enumerate(zip(again, data)) if a != b), min(len(again), len(data)))
        print(f"{path}: protobuf writes the parsed model as {len(again)} bytes, the file has "
              f"{len(data)}; first difference at byte {at}", file=sys.stderr)
        failed = 1
        continue
    if as_json:
        print(json.dumps(json_format.MessageToDict(model, preserving_proto_field_name=True)))
    else:
        print(f"ok {path} ({len(model.graph.node)} nodes, {len(model.graph.initializer)} initializers{note})")
sys.exit(failed)
