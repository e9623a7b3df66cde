#!/usr/bin/python3
"""Reference for tar shards (WebDataset layout), with Python's own tarfile and torch.

Usage:
  tar_shards.py read DIR      lists every *.tar of DIR with tarfile: per member its name, size,
                              data offset and sha256 (and the text of .cls members); JSON
  tar_shards.py write DIR     writes shards with tarfile (PAX format, and GNU for the last) holding
                              the cases a reader meets (long names, extra members, a missing or
                              bad .cls, a sample without image, a folder entry); prints per shard the
                              samples a WebDataset reader groups, in order; JSON
  tar_shards.py randperm N SEED [SEED...]   torch.randperm(N) with a generator seeded SEED; JSON
"""
import hashlib, io, json, os, sys, tarfile

import torch


def read(root):
    out = []
    for name in sorted(f for f in os.listdir(root) if f.endswith(".tar")):
        members = []
        with tarfile.open(os.path.join(root, name)) as tar:
            for m in tar.getmembers():
                if not m.isfile():
                    continue
                data = tar.extractfile(m).read()
                entry = {"name": m.name, "size": m.size, "offset": m.offset_data,
                         "sha256": hashlib.sha256(data).hexdigest(),
                         "format_ok": m.mtime == 0 and m.mode == 0o644}
                if m.name.endswith(".cls"):
                    entry["text"] = data.decode()
                members.append(entry)
        out.append({"name": name, "members": members})
    print(json.dumps(out))


def write(root):
    os.makedirs(root, exist_ok=True)
    long_dir = "d" * 60 + "/" + "e" * 60  # > 100 characters with the file name: a PAX header
    shards = [
        [("a/x1", "jpg", b"\xff\xd8" + bytes(range(200)), "3"),
         ("a/x2", "png", b"\x89PNG" + b"p" * 700, "0"),
         (long_dir + "/img", "jpeg", b"\xff\xd8" + b"q" * 1500, "2\n"),
         ("b/nolabel", "jpg", b"\xff\xd8" + b"r" * 10, None),
         ("b/badlabel", "jpg", b"\xff\xd8" + b"s" * 10, "cat")],
        [("c/onlycls", None, None, "1"),
         ("c/ok", "jpg", b"\xff\xd8" + b"t" * 513, "1")],
        [("g" * 110, "png", b"\x89PNG" + b"u" * 90, "2")],  # GNU long name ('L' header)
    ]
    expected = []
    for k, samples in enumerate(shards):
        name = "part-%02d.tar" % k
        members = []
        fmt = tarfile.GNU_FORMAT if k == 2 else tarfile.PAX_FORMAT
        with tarfile.open(os.path.join(root, name), "w", format=fmt) as tar:
            info = tarfile.TarInfo("a")
            info.type = tarfile.DIRTYPE
            tar.addfile(info)

            def add(member, data):
                info = tarfile.TarInfo(member)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))

            for key, ext, data, cls in samples:
                entry = {"key": key}
                if ext is not None:
                    add(key + "." + ext, data)
                    entry.update(ext=ext, size=len(data), member=key + "." + ext,
                                 sha256=hashlib.sha256(data).hexdigest())
                if key == "a/x1":
                    add(key + ".json", b'{"extra": true}')  # other members are ignored
                if cls is not None:
                    add(key + ".cls", cls.encode())
                entry["label"] = int(cls) if cls is not None and cls.strip().isdigit() else None
                members.append(entry)
        with tarfile.open(os.path.join(root, name)) as tar:  # where tarfile finds the data
            for entry in members:
                if "member" in entry:
                    entry["offset"] = tar.getmember(entry.pop("member")).offset_data
        expected.append({"name": name, "samples": members})
    print(json.dumps(expected))


def randperm(n, seeds):
    print(json.dumps({str(s): torch.randperm(n, generator=torch.Generator().manual_seed(s)).tolist()
                      for s in seeds}))


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "read":
        read(sys.argv[2])
    elif mode == "write":
        write(sys.argv[2])
    elif mode == "randperm":
        randperm(int(sys.argv[2]), [int(s) for s in sys.argv[3:]])
    else:
        sys.exit("unknown mode " + mode)
