#!/usr/bin/python3
"""Reference values for the fixres model and weight tests, from Python torch/torchvision.

make OUTDIR   writes, for each architecture, random weights in one of the file layouts fixres
              must read, inputs, and torchvision's outputs (eval and train mode, running stats
              after the train-mode forward); plus bad files for the error tests.
check DIR     loads weights and outputs written by fixres (round trip): for each
              DIR/<arch>_cpp_weights.pth, loads it into torchvision (strict, weights_only=True)
              and compares with DIR/<arch>_cpp_outputs.pth; also checks DIR/generic.pth.
              Prints one line per check; exit status 0 when all pass.
"""
import os, argparse
import collections
import sys
import zipfile

import numpy
import torch
import torchvision
from torch import nn
from torchvision.models import resnet as tvr

NUM_CLASSES = 10
INPUT_SHAPES = [(2, 3, 64, 64), (2, 3, 48, 80)]
TOLERANCE = 1e-5


class TinyResNet(tvr.ResNet):
    """fixres's resnet_tiny: basic blocks [1,1,1,1], widths 16/32/64/128, 3x3 stride-1 stem,
    no max-pool; torchvision's ResNet code and names otherwise."""

    def __init__(self, num_classes=NUM_CLASSES):
        nn.Module.__init__(self)
        widths = (16, 32, 64, 128)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = widths[0], 1, 1, 64
        self.conv1 = nn.Conv2d(3, widths[0], kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.Identity()
        self.layer1 = self._make_layer(tvr.BasicBlock, widths[0], 1)
        self.layer2 = self._make_layer(tvr.BasicBlock, widths[1], 1, stride=2)
        self.layer3 = self._make_layer(tvr.BasicBlock, widths[2], 1, stride=2)
        self.layer4 = self._make_layer(tvr.BasicBlock, widths[3], 1, stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3], num_classes)


# architecture -> (constructor, file layout the test reads it in)
ARCHS = {
    "resnet18": (lambda: torchvision.models.resnet18(num_classes=NUM_CLASSES), "bare"),
    "resnet50": (lambda: torchvision.models.resnet50(num_classes=NUM_CLASSES), "fixres"),
    "resnext50_32x4d": (lambda: torchvision.models.resnext50_32x4d(num_classes=NUM_CLASSES),
                        "checkpoint"),
    "resnet_tiny": (lambda: TinyResNet(), "bare"),
}


def build(arch):
    return ARCHS[arch][0]()


def randomize(model, gen):
    """Non-trivial BatchNorm affine parameters and running statistics."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(0.5 + torch.rand(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))
                m.num_batches_tracked.fill_(7)


def forward_with_embedding(model, x):
    x = model.maxpool(model.relu(model.bn1(model.conv1(x))))
    x = model.layer4(model.layer3(model.layer2(model.layer1(x))))
    emb = torch.flatten(model.avgpool(x), 1)
    return model.fc(emb), emb


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def make(out):
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    inputs = {f"x{k}": torch.randn(s, generator=gen) for k, s in enumerate(INPUT_SHAPES)}
    torch.save(inputs, f"{out}/inputs.pth")
    for arch, (_, layout) in ARCHS.items():
        model = build(arch)
        randomize(model, gen)
        sd = model.state_dict()
        if layout == "bare":
            torch.save(sd, f"{out}/{arch}.pth")
        elif layout == "fixres":
            torch.save({"model": collections.OrderedDict(("module." + k, v) for k, v in sd.items())},
                       f"{out}/{arch}.pth")
        else:
            opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            # Also what training scripts put in checkpoints: numpy scalars, an argparse
            # namespace (a class fixres does not know).
            torch.save({"epoch": 3, "accuracy": 0.25, "model": sd, "optimizer": opt.state_dict(),
                        "lr_scheduler": {"step_size": 30, "gamma": 0.1, "last_epoch": 3},
                        "best_acc": numpy.float64(0.625), "step": numpy.int64(-12345678901),
                        "args": argparse.Namespace(lr=0.1, arch=arch)},
                       f"{out}/{arch}.pth")
        expected = {}
        model.eval()
        with torch.no_grad():
            for name, x in inputs.items():
                logits, emb = forward_with_embedding(model, x)
                assert rel_err(logits, model(x)) < 1e-6
                expected[f"eval_logits_{name}"] = logits
                expected[f"eval_embedding_{name}"] = emb
            model.train()
            logits, emb = forward_with_embedding(model, inputs["x0"])
            expected["train_logits_x0"] = logits
            expected["train_embedding_x0"] = emb
            for k, v in model.state_dict().items():
                if "running_" in k or "num_batches_tracked" in k:
                    expected["train_state." + k] = v
        torch.save(expected, f"{out}/{arch}_expected.pth")

    # Bad files for the error tests, from resnet_tiny's weights.
    sd = torch.load(f"{out}/resnet_tiny.pth")
    torch.save(sd, f"{out}/legacy.pth", _use_new_zipfile_serialization=False)
    missing = collections.OrderedDict((k, v) for k, v in sd.items()
                                      if k != "layer1.0.bn1.running_var")
    torch.save(missing, f"{out}/missing_key.pth")
    extra = collections.OrderedDict(sd)
    extra["extra.weight"] = torch.zeros(3)
    torch.save(extra, f"{out}/unexpected_key.pth")
    shaped = collections.OrderedDict(sd)
    shaped["layer2.0.conv1.weight"] = torch.zeros(32, 16, 1, 1)
    torch.save(shaped, f"{out}/wrong_shape.pth")
    torch.save([1, 2, 3], f"{out}/not_a_dict.pth")
    torch.save({"epoch": 1, "note": "no weights"}, f"{out}/no_state_dict.pth")
    with zipfile.ZipFile(f"{out}/other.zip", "w") as z:  # a zip, but not from torch.save
        z.writestr("a.txt", "hello")
    with zipfile.ZipFile(f"{out}/bad_pickle.pth", "w") as z:  # data.pkl cut short
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00(X\x0c\x00\x00\x00conv")
        z.writestr("archive/version", "3\n")
    # A pickle that calls os.system when Python's (non weights_only) torch.load reads it: the
    # classic malicious checkpoint. The command touches $FIXRES_PAYLOAD_MARKER, so a test can see
    # whether it ran. Loading it must never run the command.
    class Payload:
        def __reduce__(self):
            return (os.system, ('touch "$FIXRES_PAYLOAD_MARKER"',))
    torch.save({"model": {"fc.weight": Payload(), "fc.bias": torch.zeros(10)}}, f"{out}/payload.pth")
    print("reference files written to", out)


def check(d):
    ok = True
    inputs = torch.load(f"{d}/inputs.pth", weights_only=True)
    for arch in ARCHS:
        path = f"{d}/{arch}_cpp_weights.pth"
        try:
            sd = torch.load(path, weights_only=True)
        except FileNotFoundError:
            continue
        model = build(arch)
        model.load_state_dict(sd, strict=True)  # raises on any missing/unexpected/mis-shaped key
        outputs = torch.load(f"{d}/{arch}_cpp_outputs.pth", weights_only=True)
        model.eval()
        with torch.no_grad():
            for name, x in inputs.items():
                logits, emb = forward_with_embedding(model, x)
                e1 = rel_err(outputs[f"logits_{name}"], logits)
                e2 = rel_err(outputs[f"embedding_{name}"], emb)
                good = e1 < TOLERANCE and e2 < TOLERANCE
                ok &= good
                print(f"{'ok' if good else 'FAIL'} round trip {arch} {name}: "
                      f"logits rel err {e1:.3g}, embedding rel err {e2:.3g}")
    # torch 1.13's weights_only unpickler lacks BINFLOAT (Python's own float encoding too).
    g = torch.load(f"{d}/generic.pth", weights_only=not torch.__version__.startswith("1."))
    base = g["base"]
    good = (g["epoch"] == 3 and abs(g["accuracy"] - 0.75) < 1e-12 and g["name"] == "fixres"
            and g["list"] == [1, 2, 3] and g["nested"]["flag"] is True
            and g["nested"]["none"] is None and g["big"] == 1 << 40 and g["neg"] == -5
            and torch.equal(g["view"], base[4:6])
            and g["view"].data_ptr() == base.data_ptr() + 4 * base.element_size()
            and g["half"].dtype == torch.float16 and torch.equal(g["half"].float(), torch.arange(4.))
            and g["long"].dtype == torch.int64 and g["long"].tolist() == [[1, 2], [3, 4]]
            and g["tuple"] == (1, "a"))
    print(f"{'ok' if good else 'FAIL'} generic values: {sorted(g.keys())}")
    ok &= good
    return ok


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("make", "check"):
        sys.exit(__doc__)
    torch.set_num_threads(1)
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        sys.exit(0 if check(sys.argv[2]) else 1)
