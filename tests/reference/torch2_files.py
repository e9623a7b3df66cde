#!/usr/bin/python3
"""What a PyTorch user does with fixres's files, with whichever torch this Python has (1.13 or 2.x).
Each command does all its cases in one process (importing torch takes seconds).

load NAME=FILE...
    Each FILE (a torch file fixres wrote) loaded three ways: torch.load(FILE, weights_only=True)
    with every warning an error, the default torch.load (its warnings listed), and, on torch 2.1
    and later, torch.load(FILE, mmap=True, weights_only=True); the three give the same objects.
    Prints a markdown table "file | weights_only=True loads | default torch.load | mmap=True |
    keys". Exit status 1 when a load fails, except for one limitation of torch 1.x, checked
    rather than assumed: its weights-only unpickler has no BINFLOAT opcode, so no file holding a
    Python float (a checkpoint's accuracy, learning rate) loads with weights_only=True there, its
    own torch.save({'x': 0.5}) included. The table then says so and names the floats.
reference FOLDER SIZE OUTDIR ARCH...
    For each torchvision ARCH: export_check.py make-tv's weights (10 classes, randomised
    BatchNorm), saved with this torch's defaults, torch.save(model.state_dict(), OUTDIR/ARCH.pth)
    (its records printed: 2.x adds .format_version, .storage_alignment, .data/serialization_id);
    then, loaded back with weights_only=True, the model on every image of FOLDER (sorted class
    folders, sorted files) through the FixRes val transform at SIZE (zoo_reference.fixres_val):
    OUTDIR/ref_ARCH_logits.npy and OUTDIR/ref_ARCH_embedding.npy.
timm-weights ORACLES OUTDIR ARCH...
    zoo_reference.py weights for each ARCH into OUTDIR/timm_ARCH.pth, with the timm of ORACLES
    (a folder or "pypi"), whose version it prints first.
export-checks FORMAT,ARCH,SOURCE,FILE,ORACLES...
    export_check.py check of each case in turn; prints "ARCH FORMAT: <its output>" for each.
    Exit status 1 when one fails.
compare OURS.npy REFERENCE.npy [OURS.npy REFERENCE.npy...]
    Relative L2 error of each pair, and that of the differences between images (each row minus
    the mean row); exit status 0 when every pair has equal shapes and errors below 1e-5 and 1e-3.
events RUN_DIR...
    TensorBoard's own reader (EventAccumulator, every point kept) on each run folder: every scalar
    of RUN_DIR/metrics.jsonl (the tags and float32 values of event_file_check.py) at its step,
    nothing else. Prints "RUN_DIR: scalars found F / S in metrics.jsonl"; exit status 1 when one
    is missing, differs or is extra. Without the tensorboard package: prints SKIP, exit status 0.
"""
import contextlib
import io
import json
import os
import sys
import warnings
import zipfile

import numpy

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import event_file_check as efc  # noqa: E402  (no torch)

BINFLOAT_MESSAGE = "Unsupported operand 71"  # pickle's BINFLOAT opcode is b'G' = 71


def torch_version():
    import torch
    return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def torch1_rejects_floats():
    """Whether this torch's weights-only unpickler refuses a float it saved itself."""
    import torch
    buf = io.BytesIO()
    torch.save({"x": 0.5}, buf)
    buf.seek(0)
    try:
        torch.load(buf, weights_only=True)
    except Exception as e:  # noqa: BLE001  (torch 1.13 raises pickle.UnpicklingError)
        return BINFLOAT_MESSAGE in str(e)
    return False


def floats_in(obj, path=""):
    """Paths of the Python floats in a loaded object."""
    if isinstance(obj, float):
        return [path or "(top)"]
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in floats_in(v, f"{path}.{k}" if path else str(k))]
    if isinstance(obj, (list, tuple)):
        return [p for i, v in enumerate(obj) for p in floats_in(v, f"{path}[{i}]")]
    return []


def same(a, b):
    import torch
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.dtype == b.dtype and a.shape == b.shape and \
            torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


def describe_keys(obj):
    import torch

    def tensors(d):
        return sum(isinstance(v, torch.Tensor) for v in d.values())
    if not isinstance(obj, dict):
        return type(obj).__name__
    if all(isinstance(v, torch.Tensor) for v in obj.values()):
        return f"{len(obj)} tensors"
    parts = [f"{k} ({tensors(v)} tensors)" if isinstance(v, dict) and tensors(v) else str(k)
             for k, v in obj.items()]
    return f"{len(obj)}: " + ", ".join(parts)


def short(e):
    text = f"{type(e).__name__}: {e}".replace("\n", " ").replace("|", "/")
    return text if len(text) < 160 else text[:100] + " ... " + text[-50:]


def load_all(specs):
    import torch
    rows, notes, failures = [], [], 0
    has_mmap = torch_version() >= (2, 1)
    float_limit = torch_version() < (2, 0) and torch1_rejects_floats()
    for spec in specs:
        name, path = spec.split("=", 1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            default = torch.load(path, map_location="cpu")
        for w in caught:
            notes.append(f"{name}: default torch.load warned: {w.category.__name__}: {w.message}")
        default_cell = "yes" + (f" ({len(caught)} warnings)" if caught else "")
        wo_cell = "yes"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                safe = torch.load(path, map_location="cpu", weights_only=True)
            if not same(safe, default):
                wo_cell = "NO: loads, but not the objects of the default torch.load"
                failures += 1
        except Exception as e:  # noqa: BLE001  (a warning raised as an error lands here too)
            floats = floats_in(default)
            if float_limit and BINFLOAT_MESSAGE in str(e) and floats:
                wo_cell = (f"no: torch {torch.__version__} unpickles no float (BINFLOAT; its own "
                           f"torch.save({{'x': 0.5}}) fails alike): " + ", ".join(floats))
            else:
                wo_cell = "NO: " + short(e)
                failures += 1
        mmap_cell = f"n/a (torch {torch.__version__})"
        if has_mmap:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    mapped = torch.load(path, map_location="cpu", mmap=True, weights_only=True)
                mmap_cell = "yes" if same(mapped, default) else "NO: other objects"
                failures += mmap_cell != "yes"
            except Exception as e:  # noqa: BLE001
                mmap_cell = "NO: " + short(e)
                failures += 1
        rows.append((name, wo_cell, default_cell, mmap_cell, describe_keys(default)))
    print(f"torch {torch.__version__}")
    print()
    print("| file | weights_only=True loads | default torch.load | mmap=True | keys |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    for note in notes:
        print(note)
    if failures:
        print(f"{failures} load(s) failed")
    return 1 if failures else 0


def records(path):
    with zipfile.ZipFile(path) as z:
        names = [n.split("/", 1)[1] for n in z.namelist()]
    special = [n for n in names if not n.startswith("data/")]
    return f"{len(names)} records: {', '.join(special)} and {len(names) - len(special)} data/*"


def reference(folder, size, outdir, archs):
    import torch
    import torchvision
    from PIL import Image
    import export_check
    import zoo_reference as zr
    from models_reference import forward_with_embedding
    torch.set_num_threads(1)
    print("python", sys.version.split()[0], "torch", torch.__version__, "torchvision", torchvision.__version__)
    tf = zr.fixres_val(size)
    classes = sorted(c for c in os.listdir(folder) if os.path.isdir(os.path.join(folder, c)))
    x = torch.stack([tf(Image.open(os.path.join(folder, c, f)).convert("RGB"))
                     for c in classes for f in sorted(os.listdir(os.path.join(folder, c)))])
    for arch in archs:
        torch.manual_seed(0)  # as export_check.py make-tv
        model = export_check.tv(arch)
        zr.randomize(model, torch.Generator().manual_seed(9))
        path = os.path.join(outdir, arch + ".pth")
        torch.save(model.state_dict(), path)
        print(f"{arch}.pth (torch.save with this torch's defaults): {records(path)}")
        if not arch.startswith("resnet"):
            continue
        model = getattr(torchvision.models, arch)(num_classes=zr.NUM_CLASSES)
        model.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
        with torch.no_grad():
            out, emb = forward_with_embedding(model.eval(), x)
        numpy.save(os.path.join(outdir, f"ref_{arch}_logits.npy"), out.numpy())
        numpy.save(os.path.join(outdir, f"ref_{arch}_embedding.npy"), emb.numpy())
    return 0


def call_main(module, argv):
    """module.main() with sys.argv set to argv: (exit status, what it printed)."""
    saved, out = sys.argv, io.StringIO()
    sys.argv = [module.__file__] + argv
    try:
        with contextlib.redirect_stdout(out):
            status = module.main()
    finally:
        sys.argv = saved
    return status or 0, out.getvalue().strip()


def timm_weights(oracles, outdir, archs):
    import torch
    import zoo_reference as zr
    timm = zr.import_timm(oracles)
    if timm is None:
        print(f"no timm at {oracles}")
        return 1
    print("timm", timm.__version__, f"({os.path.dirname(os.path.abspath(timm.__file__))})")
    for arch in archs:  # as zoo_reference.py weights
        torch.manual_seed(0)
        m = zr.build("timm", arch, timm)
        zr.randomize(m, torch.Generator().manual_seed(5))
        torch.save(m.state_dict(), os.path.join(outdir, f"timm_{arch}.pth"))
        del m
    return 0


def export_checks(cases):
    import export_check
    status = 0
    for case in cases:
        fmt, arch, source, file, oracles = case.split(",")
        try:
            code, text = call_main(export_check, ["check", fmt, arch, source, file, oracles])
        except Exception as e:  # noqa: BLE001  (a strict load that fails raises)
            code, text = 1, short(e)
        print(f"{arch} {fmt}: {text}")
        status |= code != 0
    return status


def compare(paths):
    status = 0
    for ours, reference_path in zip(paths[::2], paths[1::2]):
        a = numpy.load(ours).astype("float64")
        b = numpy.load(reference_path).astype("float64")
        name = os.path.basename(ours)
        if a.shape != b.shape:
            print(f"{name}: shapes differ, {a.shape} and {b.shape}")
            status = 1
            continue
        err = numpy.linalg.norm(a - b) / numpy.linalg.norm(b)
        # Random networks give nearly the same outputs for every image: compare the differences too.
        ca, cb = a - a.mean(0), b - b.mean(0)
        cerr = numpy.linalg.norm(ca - cb) / numpy.linalg.norm(cb)
        print(f"{name}: relative L2 error {err:.3g}, between images {cerr:.3g}, shape {a.shape}")
        status |= not (err < 1e-5 and cerr < 1e-3)
    return status


def events(run_dirs):
    try:
        import tensorboard
        from tensorboard.backend.event_processing import event_accumulator as ea
    except ImportError:
        print(f"SKIP: no tensorboard package for {sys.executable}: TensorBoard's reader not run "
              "(tests/reference/event_file_check.py reads the files by hand)")
        return 0
    print(f"tensorboard {tensorboard.__version__}")
    status = 0
    for run_dir in run_dirs:
        acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0})
        acc.Reload()
        found = {}
        for tag in acc.Tags()["scalars"]:
            for point in acc.Scalars(tag):
                found[(tag, point.step)] = point.value
        expected = {}
        for line in open(os.path.join(run_dir, "metrics.jsonl")):
            record = json.loads(line)
            if isinstance(record.get("step"), int):
                for tag, value in efc.expected_scalars(record):
                    expected[(tag, record["step"])] = efc.f32(value)
        hits = [k for k in expected if k in found and efc.same(efc.f32(found[k]), expected[k])]
        missing = sorted(k for k in expected if k not in found)
        wrong = sorted(k for k in expected if k in found and k not in hits)
        extra = sorted(k for k in found if k not in expected)
        tags = len({t for t, _ in expected})
        print(f"{os.path.basename(os.path.dirname(run_dir))}/{os.path.basename(run_dir)}: "
              f"scalars found {len(hits)} / {len(expected)} in metrics.jsonl ({tags} tags; "
              f"{len(acc.Tags()['scalars'])} tags in the events)")
        if missing or wrong or extra:
            print("  missing:", missing[:5], "different (tag, step, events, json):",
                  [(k, found[k], expected[k]) for k in wrong[:5]], "extra:", extra[:5])
            status = 1
        if not expected:
            print("  metrics.jsonl holds no scalar")
            status = 1
    return status


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "load":
        return load_all(args)
    if cmd == "reference":
        return reference(args[0], int(args[1]), args[2], args[3:])
    if cmd == "timm-weights":
        return timm_weights(args[0], args[1], args[2:])
    if cmd == "export-checks":
        return export_checks(args)
    if cmd == "compare":
        return compare(args)
    if cmd == "events":
        return events(args)
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main())
