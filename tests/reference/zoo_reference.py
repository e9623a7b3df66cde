#!/usr/bin/python3
"""Reference values for fixres's EfficientNet and PNASNet models, from timm and torchvision.

make OUTDIR ORACLES   for each case: random weights (BatchNorm statistics and affine parameters
                      randomised) saved as a state dict in the layout fixres must read, inputs,
                      and the reference model's outputs: eval logits and embeddings, train-mode
                      logits and the running statistics after that forward.
                      ORACLES: the folder holding timm's source, or "pypi" for the installed
                      timm package (cases that need timm are left out, and listed as skipped,
                      when it is absent).
weights ARCH OUT [ARCH OUT ...] ORACLES
                      a timm ARCH with NUM_CLASSES outputs and randomised BatchNorm, saved as a
                      state dict to OUT; each pair in one process.
logits WEIGHTS ARCH FOLDER SIZE OUT ORACLES [half|bicubic-half]
                      the reference model (timm) with WEIGHTS on every image of FOLDER (sorted
                      class folders, sorted files) through the FixRes val transform at SIZE
                      (Resize(int(SIZE * 256 / 224)) on the height, CenterCrop(SIZE), ImageNet
                      normalisation, bilinear): logits saved to OUT (.npy).
version ORACLES       prints "timm VERSION (PATH)" of that timm; exit status 1 when it is absent.
Prints one line per case written.
"""
import os
import sys

import numpy
import torch

# One intra-op thread, as the C++ side under CTest: a reduction's order (its last digits)
# follows the thread count.
torch.set_num_threads(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_reference import randomize  # noqa: E402  (non-trivial BatchNorm statistics)

NUM_CLASSES = 10
# Square, and odd sizes: TensorFlow "same" padding is asymmetric there. PNASNet's last feature
# maps are 3 x 3 and 3 x 4 at these sizes.
INPUT_SHAPES = [(2, 3, 96, 96), (2, 3, 67, 101)]

# case -> (source, model name, layout of the weight file)
CASES = {
    "tf_efficientnet_b0": ("timm", "tf_efficientnet_b0", "bare"),
    "tf_efficientnet_b3": ("timm", "tf_efficientnet_b3", "fixres"),
    "efficientnet_b0": ("timm", "efficientnet_b0", "bare"),
    "efficientnet_b2": ("torchvision", "efficientnet_b2", "bare"),
    "pnasnet5large": ("timm", "pnasnet5large", "bare"),
    "resnet26d": ("timm", "resnet26d", "bare"),
}


def import_timm(oracles):
    """timm from the folder ORACLES (its source, first on sys.path), or the installed package when
    ORACLES is "pypi"; None when that timm is absent."""
    if oracles == "pypi":
        try:
            import timm  # noqa: E402
        except ImportError:
            return None
        return timm
    if not oracles or not os.path.isdir(os.path.join(oracles, "timm")):
        return None
    sys.path.insert(0, oracles)
    import timm  # noqa: E402
    return timm


def build(source, name, timm):
    if source == "timm":
        return timm.create_model(name, pretrained=False, num_classes=NUM_CLASSES)
    import torchvision
    # Without stochastic depth and dropout, as timm's defaults: train mode is then deterministic.
    model = getattr(torchvision.models, name)(num_classes=NUM_CLASSES, stochastic_depth_prob=0.0)
    model.classifier[0].p = 0.0
    return model


def forward_with_embedding(source, model, x):
    if source == "timm":
        emb = model.forward_head(model.forward_features(x), pre_logits=True)
        return model.get_classifier()(emb), emb
    emb = torch.flatten(model.avgpool(model.features(x)), 1)
    return model.classifier(emb), emb


def make(out, oracles):
    timm = import_timm(oracles)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(3)
    inputs = {f"x{k}": torch.randn(s, generator=gen) for k, s in enumerate(INPUT_SHAPES)}
    torch.save(inputs, f"{out}/inputs.pth")
    for case, (source, name, layout) in CASES.items():
        if source == "timm" and timm is None:
            print("skipped", case, "(no timm oracle)")
            continue
        model = build(source, name, timm)
        randomize(model, gen)
        sd = model.state_dict()
        if layout == "fixres":
            sd = {"model": {"module." + k: v for k, v in sd.items()}}
        torch.save(sd, f"{out}/{case}.pth")
        expected = {}
        model.eval()
        with torch.no_grad():
            for k, x in inputs.items():
                logits, emb = forward_with_embedding(source, model, x)
                assert (logits - model(x)).abs().max() < 1e-5
                expected[f"eval_logits_{k}"] = logits
                expected[f"eval_embedding_{k}"] = emb
            model.train()
            logits, emb = forward_with_embedding(source, model, inputs["x1"])
            expected["train_logits_x1"] = logits
            for k, v in model.state_dict().items():
                if "running_" in k:
                    expected["train_state." + k] = v
        torch.save(expected, f"{out}/{case}_expected.pth")
        print("wrote", case)


def fixres_val(size, variant=""):
    """variant "half": mean = std = 0.5 (PNASNet's); "bicubic-half": also a bicubic resize."""
    from PIL import Image
    import torchvision.transforms as T

    resize = int(size * 256 / 224)
    bicubic = variant == "bicubic-half"
    half = variant in ("half", "bicubic-half")
    mean, std = ([0.5] * 3, [0.5] * 3) if half else ([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])

    def height(img):
        w, h = img.size
        return img.resize((int(resize * w / h), resize), Image.BICUBIC if bicubic else Image.BILINEAR)

    return T.Compose([T.Lambda(height), T.CenterCrop(size), T.ToTensor(), T.Normalize(mean, std)])


def logits(weights, arch, folder, size, out, oracles, variant=""):
    from PIL import Image
    timm = import_timm(oracles)
    model = timm.create_model(arch, pretrained=False, num_classes=NUM_CLASSES)
    model.load_state_dict(torch.load(weights, map_location="cpu"))
    model.eval()
    tf = fixres_val(size, variant)
    xs = []
    for c in sorted(os.listdir(folder)):
        for f in sorted(os.listdir(os.path.join(folder, c))):
            xs.append(tf(Image.open(os.path.join(folder, c, f)).convert("RGB")))
    with torch.no_grad():
        numpy.save(out, model(torch.stack(xs)).numpy())


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    elif sys.argv[1] == "weights":
        timm = import_timm(sys.argv[-1])
        for arch, out in zip(sys.argv[2:-1:2], sys.argv[3:-1:2]):
            torch.manual_seed(0)
            m = build("timm", arch, timm)
            randomize(m, torch.Generator().manual_seed(5))
            torch.save(m.state_dict(), out)
    elif sys.argv[1] == "version":
        timm = import_timm(sys.argv[2])
        if timm is None:
            sys.exit(f"no timm at {sys.argv[2]}")
        print("timm", timm.__version__, f"({os.path.dirname(os.path.abspath(timm.__file__))})")
    elif sys.argv[1] == "logits":
        logits(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6],
               sys.argv[7] if len(sys.argv) > 7 else "", sys.argv[8] if len(sys.argv) > 8 else "")
    else:
        sys.exit(__doc__)
