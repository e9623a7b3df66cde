#!/usr/bin/python3
"""Reference reader of TensorBoard event files, independent of fixres: TFRecord framing checked
with its own bitwise CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord's mask,
Event / Summary protocol buffers decoded by hand from the wire format (tensorflow's event.proto,
summary.proto). When /usr/bin/python3 has the `tensorboard` package, its EventFileLoader reads
the files too and must see the same events.

  event_file_check.py run RUN_DIR
      Every events.out.tfevents.* file of RUN_DIR (in name order, i.e. in the order the run
      started them): every record whole with both masked CRCs right, the first event of each file
      the file_version "brain.Event:2", a later file (a resumed run) next holding a SessionLog
      START at the first step it trains (TensorBoard then drops the earlier files' points from that
      step on). The scalars then equal RUN_DIR/metrics.jsonl: for each
      record of metrics.jsonl with an integer "step", every number in it but step, epoch and
      iteration, tagged train/<key> (top level) or <object>[_<phase>]/<name> (one level down), is
      the value of that tag at that step in the events, as a float32 (null = NaN); the events hold
      nothing else, except points of an earlier file at or past a later file's START step. Prints "ok: F files, E events, S scalars".
  event_file_check.py file FILE EXPECTED.json
      FILE's events equal EXPECTED.json: a list of {"wall_time", "step", "file_version"} /
      {"wall_time", "step", "scalars": [[tag, value], ...]} / {"wall_time", "step", "restart": true}
      (values compared as float32, wall times as doubles).
"""
import glob
import json
import math
import os
import struct
import sys


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def records(path):
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        assert pos + 12 <= len(data), f"{path}: a record header cut at byte {pos}"
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
        assert length_crc == masked(crc32c(header)), f"{path}: length CRC wrong at byte {pos}"
        body = data[pos + 12:pos + 12 + length]
        assert len(body) == length and pos + 16 + length <= len(data), f"{path}: record cut at byte {pos}"
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
        assert data_crc == masked(crc32c(body)), f"{path}: data CRC wrong at byte {pos}"
        out.append(body)
        pos += 16 + length
    return out


def varint(buf, pos):
    shift = value = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, pos


def fields(buf):
    """(field number, wire type, value) of a message: ints for varints, bytes otherwise."""
    pos, out = 0, []
    while pos < len(buf):
        key, pos = varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        assert pos <= len(buf), "a field runs past its message"
        out.append((number, wire, value))
    return out


def decode_event(buf):
    event = {"step": 0}
    for number, wire, value in fields(buf):
        if number == 1:
            assert wire == 1
            event["wall_time"] = struct.unpack("<d", value)[0]
        elif number == 2:
            assert wire == 0
            event["step"] = value - (1 << 64) if value >= 1 << 63 else value
        elif number == 3:
            assert wire == 2
            event["file_version"] = value.decode()
        elif number == 5:
            assert wire == 2
            scalars = []
            for n, w, v in fields(value):
                assert (n, w) == (1, 2), "Summary holds only values"
                tag, simple = None, None
                for vn, vw, vv in fields(v):
                    if vn == 1:
                        tag = vv.decode()
                    elif vn == 2:
                        assert vw == 5
                        simple = struct.unpack("<f", vv)[0]
                assert tag is not None and simple is not None, "a value without tag or simple_value"
                scalars.append((tag, simple))
            event["scalars"] = scalars
        elif number == 6:
            status = dict((n, v) for n, _, v in fields(value)).get(1)
            assert status == 1, f"SessionLog status {status}, expected START"
            event["restart"] = True
        else:
            raise AssertionError(f"unexpected Event field {number}")
    assert "wall_time" in event, "an event without wall_time"
    return event


def read_events(path):
    return [decode_event(r) for r in records(path)]


def f32(x):
    return float("nan") if x is None else struct.unpack("<f", struct.pack("<f", float(x)))[0]


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == b


def expected_scalars(record):
    phase = record.get("phase")
    suffix = "_" + phase if isinstance(phase, str) else ""
    out = []
    for key, value in record.items():
        if key in ("step", "epoch", "iteration"):
            continue
        if isinstance(value, dict):
            for name, inner in value.items():
                if (isinstance(inner, (int, float)) and not isinstance(inner, bool)) or inner is None:
                    out.append((f"{key}{suffix}/{name}", inner))
        elif (isinstance(value, (int, float)) and not isinstance(value, bool)) or value is None:
            # nlohmann::json writes a NaN or infinite number as null
            out.append((f"train/{key}", value))
    return out


def check_with_tensorboard(paths, decoded):
    try:
        from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    except ImportError:
        return "tensorboard not installed: hand decoding only"
    for path, mine in zip(paths, decoded):
        theirs = list(EventFileLoader(path).Load())
        assert len(theirs) == len(mine), f"{path}: tensorboard reads {len(theirs)} events, we {len(mine)}"
        for t, m in zip(theirs, mine):
            assert t.step == m["step"] and t.wall_time == m["wall_time"]
            if "scalars" in m:
                got = [(v.tag, v.simple_value if v.HasField("simple_value") else
                        v.tensor.float_val[0]) for v in t.summary.value]
                assert len(got) == len(m["scalars"]) and all(
                    a[0] == b[0] and same(a[1], b[1]) for a, b in zip(got, m["scalars"])), (got, m)
    return "tensorboard's EventFileLoader agrees"


def check_run(run_dir):
    paths = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
    assert paths, f"no events.out.tfevents.* in {run_dir}"
    decoded = [read_events(p) for p in paths]
    values = {}  # (tag, step) -> value, later files and events overriding earlier ones
    restarts = []  # steps later files restarted from
    n_events = n_scalars = 0
    last_wall = 0.0
    for index, (path, events) in enumerate(zip(paths, decoded)):
        assert events and events[0].get("file_version") == "brain.Event:2", f"{path}: no file_version first"
        body = events[1:]
        if index > 0:
            assert body and body[0].get("restart"), f"{path}: a later file without SessionLog START"
            start = body[0]["step"]
            restarts.append(start)
            values = {k: v for k, v in values.items() if k[1] < start}  # as TensorBoard purges
            body = body[1:]
        for e in events:
            assert 1.5e9 < e["wall_time"] < 4e9, f"{path}: wall_time {e['wall_time']}"
            assert e["wall_time"] >= last_wall - 1e-3, f"{path}: wall_time goes back"
            last_wall = e["wall_time"]
        for e in body:
            assert "scalars" in e and e["scalars"], f"{path}: an event without scalars"
            for tag, value in e["scalars"]:
                values[(tag, e["step"])] = value
                n_scalars += 1
        n_events += len(events)
    expected = {}
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        record = json.loads(line)
        if not isinstance(record.get("step"), int):
            continue
        for tag, value in expected_scalars(record):
            expected[(tag, record["step"])] = f32(value)
    missing = sorted(set(expected) - set(values))
    extra = sorted(set(values) - set(expected))
    assert not missing, f"scalars of metrics.jsonl missing from the events: {missing[:5]}"
    assert not extra, f"scalars in the events that metrics.jsonl lacks: {extra[:5]}"
    wrong = [(k, values[k], expected[k]) for k in expected if not same(values[k], expected[k])]
    assert not wrong, f"scalars that differ from metrics.jsonl (tag, step, event, json): {wrong[:5]}"
    note = check_with_tensorboard(paths, decoded)
    print(f"ok: {len(paths)} files, {n_events} events, {len(expected)} scalars "
          f"({n_scalars} written, restarts at {restarts}); {note}")


def check_file(path, expected_path):
    events = read_events(path)
    expected = json.load(open(expected_path))
    assert len(events) == len(expected), f"{len(events)} events, expected {len(expected)}"
    for i, (got, want) in enumerate(zip(events, expected)):
        assert got["wall_time"] == want["wall_time"], (i, got, want)
        assert got["step"] == want["step"], (i, got, want)
        for key in ("file_version", "restart"):
            assert got.get(key) == want.get(key), (i, key, got, want)
        want_scalars = [(t, f32(v)) for t, v in want.get("scalars", [])]
        got_scalars = got.get("scalars", [])
        assert len(got_scalars) == len(want_scalars) and all(
            a[0] == b[0] and same(a[1], b[1]) for a, b in zip(got_scalars, want_scalars)), (i, got, want)
    note = check_with_tensorboard([path], [events])
    print(f"ok: {len(events)} events; {note}")


def main():
    if sys.argv[1] == "run":
        check_run(sys.argv[2])
    elif sys.argv[1] == "file":
        check_file(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
