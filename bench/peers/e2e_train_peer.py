#!/usr/bin/python3
"""Peer: the reference's training input path end to end. A PyTorch DataLoader with PIL workers
(the FixRes `full` train transform: RandomResizedCrop, flip, ColorJitter 0.3, ToTensor,
Normalize) feeds torchvision's ResNet-50 (SGD step, optional bf16 autocast and channels-last).

Prints the images per second of the timed steps, so that fixres's own training loop can be
compared on the same image folder in the same run.
Usage: e2e_train_peer.py DIR [--size 224] [--batch 256] [--workers N] [--steps 40] [--warmup 10]
                         [--bf16] [--channels-last] [--device cuda|cpu] [--arch resnet50]
"""
import argparse, os, time
import torch, torchvision
from torchvision import datasets, transforms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--arch", default="resnet50")
    a = ap.parse_args()
    dev = torch.device(a.device)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
    norm = transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    tf = transforms.Compose([transforms.RandomResizedCrop(a.size), transforms.RandomHorizontalFlip(),
                             transforms.ColorJitter(0.3, 0.3, 0.3), transforms.ToTensor(), norm])
    ds = datasets.ImageFolder(a.dir, tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True, drop_last=True,
                                         num_workers=a.workers, pin_memory=dev.type == "cuda",
                                         persistent_workers=a.workers > 0)
    model = getattr(torchvision.models, a.arch)(num_classes=len(ds.classes)).to(dev)
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    model = model.to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    crit = torch.nn.CrossEntropyLoss()
    total = a.warmup + a.steps
    done, t0 = 0, None
    while done < total:
        for x, y in loader:
            if done == a.warmup:
                if dev.type == "cuda":
                    torch.cuda.synchronize()
                t0 = time.perf_counter()
            x = x.to(dev, non_blocking=True).contiguous(memory_format=fmt)
            y = y.to(dev, non_blocking=True)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.bf16):
                loss = crit(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            done += 1
            if done == total:
                break
    if dev.type == "cuda":
        torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    peak = torch.cuda.max_memory_allocated(dev) / 2**20 if dev.type == "cuda" else 0.0
    print(f"peer DataLoader+PIL ({a.workers} workers) -> {a.arch} size {a.size} batch {a.batch} "
          f"bf16={a.bf16} channels_last={a.channels_last} {dev}: peak {peak:.0f} MiB")
    print(f"{a.steps * a.batch / dt:.1f} img/s")


if __name__ == "__main__":
    main()
