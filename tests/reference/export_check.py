#!/usr/bin/python3
"""Checks files written by `fixres export` with the loaders Python users have.

make-tv ARCH OUT            torchvision ARCH (10 classes, randomised BatchNorm) saved bare to OUT.
check FORMAT ARCH SOURCE FILE ORACLES
    SOURCE: the weights fixres exported from (timm names for timm/fixres/torchvision-from-timm,
    or torchvision names). Builds the model FILE is meant for, loads FILE strictly with that
    tool's loader (FORMAT fixres: the FixRes reference's main_evaluate loader, i.e.
    torch.load(FILE)['model'] with 'module.' removed; torchvision / timm: load_state_dict(strict))
    and compares its logits on a fixed input with the model SOURCE was written for.
    Prints the relative L2 error; exit status 0 when it is below 1e-5.
"""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import zoo_reference as zr  # noqa: E402


def tv(arch):
    return zr.build("torchvision", arch, None) if arch.startswith("efficientnet") else \
        getattr(__import__("torchvision").models, arch)(num_classes=zr.NUM_CLASSES)


def main():
    torch.manual_seed(0)
    if sys.argv[1] == "make-tv":
        m = tv(sys.argv[2])
        zr.randomize(m, torch.Generator().manual_seed(9))
        torch.save(m.state_dict(), sys.argv[3])
        return 0
    fmt, arch, source, file, oracles = sys.argv[2:7]
    timm = zr.import_timm(oracles)
    src_sd = torch.load(source, map_location="cpu")
    from_tv = any(k.startswith("features.") for k in src_sd) or arch.startswith("resnet")
    src = tv(arch) if from_tv else timm.create_model(arch, num_classes=zr.NUM_CLASSES)
    src.load_state_dict(src_sd)
    if fmt == "fixres":  # the reference builds ResNets from torchvision, the others from timm
        dst = tv(arch) if arch.startswith("resnet") else timm.create_model(arch, num_classes=zr.NUM_CLASSES)
        pretrained = torch.load(file, map_location="cpu")["model"]
        dst.load_state_dict({k.replace("module.", ""): v for k, v in pretrained.items()})
    elif fmt == "torchvision":
        dst = tv(arch)
        dst.load_state_dict(torch.load(file, map_location="cpu", weights_only=True))
    else:
        dst = timm.create_model(arch, num_classes=zr.NUM_CLASSES)
        dst.load_state_dict(torch.load(file, map_location="cpu", weights_only=True))
    x = torch.randn(2, 3, 96, 96, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        a, b = dst.eval()(x).double(), src.eval()(x).double()
    err = ((a - b).norm() / b.norm()).item()
    print("relative L2 error", err)
    return 0 if err < 1e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
