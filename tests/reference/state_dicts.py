#!/usr/bin/python3
"""Reference checks on weight files with Python's torch.load (the files fixres writes must be
what PyTorch reads).
  state_dicts.py keys FILE                      print the model's keys (one per line)
  state_dicts.py equal A B [ENTRY]              exit 0 if the model tensors (or those of the
        checkpoints' ENTRY, e.g. model_ema, with its n_averaged) are bitwise equal
  state_dicts.py finetune-changed BEFORE AFTER LASTBN
        exit 0 if, between the two files, only fc.* and LASTBN.running_* / num_batches_tracked
        changed (and those did change)
  state_dicts.py npy-check SAVE ARCH N CLASSES DIM    shapes, dtypes, softmax rows sum to 1
  state_dicts.py flip-byte FILE                 flip one bit in the middle of the largest tensor
        record of a torch.save zip file, in place (the zip structure stays intact)
"""
import sys
import numpy as np
import torch


def model_of(path, entry="model"):
    obj = torch.load(path, map_location="cpu")
    if isinstance(obj, dict) and entry in obj:
        obj = obj[entry]
    elif entry != "model":
        raise SystemExit(f"{path} has no {entry}")
    return {k[7:] if k.startswith("module.") else k: v for k, v in obj.items()}


def main():
    cmd = sys.argv[1]
    if cmd == "keys":
        for k in model_of(sys.argv[2]):
            print(k)
    elif cmd == "equal":
        entry = sys.argv[4] if len(sys.argv) > 4 else "model"
        a, b = model_of(sys.argv[2], entry), model_of(sys.argv[3], entry)
        assert a.keys() == b.keys(), "different keys"
        bad = [k for k in a if not torch.equal(a[k], b[k])]
        if bad:
            print("differ:", bad[:5], "max abs diff", max((a[k].double() - b[k].double()).abs().max().item() for k in bad))
            sys.exit(1)
        print("equal:", len(a), "tensors")
    elif cmd == "finetune-changed":
        a, b, last = model_of(sys.argv[2]), model_of(sys.argv[3]), sys.argv[4]
        changed = {k for k in a if not torch.equal(a[k], b[k])}
        allowed = {k for k in a if k.startswith("fc.")} | {last + ".running_mean", last + ".running_var", last + ".num_batches_tracked"}
        unexpected = changed - allowed
        missing = {"fc.weight", last + ".running_mean", last + ".running_var"} - changed
        print("changed:", sorted(changed))
        if unexpected or missing:
            print("unexpected changes:", sorted(unexpected), "expected but unchanged:", sorted(missing))
            sys.exit(1)
    elif cmd == "npy-check":
        save, arch, n, classes, dim = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
        labels = np.load(f"{save}/labels.npy")
        sm = np.load(f"{save}/{arch}_softmax.npy")
        lg = np.load(f"{save}/{arch}_logits.npy")
        em = np.load(f"{save}/{arch}_embedding.npy")
        assert labels.dtype == np.int64 and labels.shape == (n,), (labels.dtype, labels.shape)
        assert sm.dtype == np.float32 and sm.shape == (n, classes), sm.shape
        assert lg.shape == (n, classes) and em.shape == (n, dim) and em.dtype == np.float32, (lg.shape, em.shape)
        assert np.allclose(sm.sum(1), 1, atol=1e-5), "softmax rows do not sum to 1"
        ref = torch.softmax(torch.from_numpy(lg).double(), 1).numpy()
        assert np.allclose(sm, ref, atol=1e-6), "softmax is not softmax(logits)"
        assert list(labels) == sorted(labels), "labels not in dataset (sorted folder) order"
        print("npy ok", labels.shape, sm.shape, em.shape)
    elif cmd == "flip-byte":
        import zipfile
        path = sys.argv[2]
        with zipfile.ZipFile(path) as z:
            info = max((i for i in z.infolist() if "/data/" in i.filename), key=lambda i: i.file_size)
        with open(path, "r+b") as f:
            f.seek(info.header_offset + 26)
            name_len = int.from_bytes(f.read(2), "little")
            extra_len = int.from_bytes(f.read(2), "little")
            pos = info.header_offset + 30 + name_len + extra_len + info.file_size // 2
            f.seek(pos)
            b = f.read(1)[0]
            f.seek(pos)
            f.write(bytes([b ^ 0x10]))
        print("flipped a bit of", info.filename, "at offset", pos)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
