#!/usr/bin/python3
"""Reference values for fixres's Vision Transformer, DeiT and ConvNeXt models, from timm.

make OUTDIR ORACLES   for each case: random weights saved as a timm state dict at the model's
                      default image size (<case>.pth), and timm's outputs at three image sizes
                      (<case>_expected.pth); plus posembed.pth, timm's resample_abs_pos_embed on
                      its own. ORACLES: the folder holding timm's source, or "pypi" for the
                      installed timm package; when that timm is absent every case is listed as
                      skipped and nothing else is written.
weights ARCH OUT [ARCH OUT ...] ORACLES
                      the timm model ARCH (10 classes) with those random weights, saved as a
                      state dict to OUT (for the ONNX checks); each pair in one process.
Prints one line per case written.

The weights: N(0, 0.02^2) (timm's scale) for the linear and convolution weights, the patch
embedding and stem N(0, 1/fan_in), LayerNorm weights U(0.5, 1.5) and biases N(0, 0.1^2), every
other bias N(0, 0.02^2), the class, register and distillation tokens and the position
embedding N(0, 0.5^2) (larger than the patch tokens: a wrongly resampled embedding shows), layer
scale (ViT ls1/ls2.gamma, ConvNeXt gamma) U(0.5, 1.5) so that every block matters, and the ViT qkv
weights N(0, 1/D) so that attention is far from uniform.

The sizes (H, W): s0 the default (224 x 224, 256 x 256 for the *_256 model, 518 x 518 for
DINOv2), s1 288 x 288, s2 160 x 256 (non-square; multiples of 16 and 32); for 14 px patches
(DINOv2 with registers: a class token and 4 register tokens) s1 224 x 224 and s2 154 x 252. <case>_expected.pth holds, for each size tag T:
  input_T             2 x 3 x H x W, randn from a fixed generator
  eval_logits_T       model(x) in eval mode
  eval_embedding_T    model.forward_head(model.forward_features(x), pre_logits=True)
  train_logits_T      model(x) in train mode (drop_rate = drop_path_rate = 0: deterministic)
  dyn_eval_logits_T   ViTs only: model(x) in eval mode of a model built at the default size with
                      dynamic_img_size=True (timm resamples pos_embed in each forward pass)
For a ViT, the model of size T is built with img_size=(H, W) and loads <case>.pth through timm's
checkpoint_filter_fn (timm.models.vision_transformer's, which DeiT's models also use), i.e.
pos_embed resampled bicubically (antialiased) from the file's square grid at load time; at s0
that is the file unchanged. ConvNeXt has no position embedding: the same weights at every size.

The distilled DeiT (VisionTransformerDistilled): its logits are (head(cls) + head_dist(dist)) / 2
of the class and distillation tokens, its pre_logits embedding (cls + dist) / 2, so its logits are
not head(embedding); the file holds what timm returns for each.

posembed.pth: for case k, posembed_in_k (1 x (prefix + old_h * old_w) x 32, randn),
posembed_grid_k = [new_h, new_w, old_h, old_w, prefix] (int64) and posembed_out_k =
resample_abs_pos_embed(in, (new_h, new_w), (old_h, old_w), prefix) with timm's defaults (bicubic,
antialias). The last case is timm's early return: the token count fits the new square grid, so the
embedding comes back unchanged although the old grid is not that grid.
"""
import functools
import os
import sys

import torch
from torch import nn

# One intra-op thread, as the C++ side under CTest: a reduction's order (its last digits)
# follows the thread count.
torch.set_num_threads(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_reference import import_timm  # noqa: E402  (timm from the oracles folder or PyPI)

NUM_CLASSES = 10
BATCH = 2
SIZES = {"s0": None, "s1": (288, 288), "s2": (160, 256)}  # None: the model's default size
# 14 px patches: 224 x 224 and 154 x 252 (11 x 18 patches) instead.
SIZES_PATCH14 = {"s0": None, "s1": (224, 224), "s2": (154, 252)}

# case -> (family, default image size). vit_base_patch16_224 and vit_small_patch16_224 are
# vit_tiny's code at other widths, deit_tiny_patch16_224 the distilled model's code without the
# distillation token (their parameter and state-dict counts against timm's stay in
# unit/models/VitParityTest.cpp, TransformerNames): measured once (docs/models.md), left out of
# the suite; vit_base was a third of the references' time and 350 MB of files.
CASES = {
    "vit_tiny_patch16_224": ("vit", 224),
    "vit_medium_patch16_reg4_gap_256": ("vit", 256),
    "vit_small_patch14_reg4_dinov2": ("vit", 518),
    "deit_tiny_distilled_patch16_224": ("vit", 224),
    "convnext_nano": ("convnext", 224),
    "convnext_tiny": ("convnext", 224),
}

# (new_h, new_w, old_h, old_w, prefix tokens)
POSEMBED_CASES = [
    (18, 18, 14, 14, 1), (10, 16, 14, 14, 1), (7, 7, 14, 14, 1),
    (18, 18, 16, 16, 0), (10, 16, 16, 16, 0), (7, 7, 16, 16, 0),
    (10, 16, 14, 14, 2), (14, 14, 10, 16, 1),
    (12, 12, 8, 18, 1),  # timm returns the input unchanged
]
POSEMBED_DIM = 32


def build(timm, name, family, size=None, dynamic=False, weights=None, filt=None):
    """The timm model, built on the meta device (timm's initialisation takes seconds for
    vit_base) and then either loaded strictly with `weights` (a state dict, passed through `filt`
    when given) or, without weights, left uninitialised for randomize()."""
    kwargs = dict(pretrained=False, num_classes=NUM_CLASSES, drop_rate=0.0, drop_path_rate=0.0,
                  device="meta")
    if family == "vit":
        if size is not None:
            kwargs["img_size"] = size
        if dynamic:
            kwargs["dynamic_img_size"] = True
    model = timm.create_model(name, **kwargs).to_empty(device="cpu")
    assert not list(model.buffers()), name  # nothing that neither randomize nor a load sets
    if weights is not None:
        model.load_state_dict(filt(weights, model) if filt else weights)
    return model


def randomize(model, gen):
    """Every parameter: timm's scales (0.02 for the linear and convolution weights, the default
    convolution scale for the patch embedding and the stem) and the non-trivial values of the
    module doc."""
    def normal(t, std):
        t.copy_(std * torch.randn(t.shape, generator=gen))

    def uniform(t):
        t.copy_(0.5 + torch.rand(t.shape, generator=gen))

    with torch.no_grad():
        norms = {n for n, m in model.named_modules() if isinstance(m, nn.LayerNorm)}
        for name, p in model.named_parameters():
            module, _, leaf = name.rpartition(".")
            if module in norms:
                uniform(p) if leaf == "weight" else normal(p, 0.1)
            elif leaf in ("cls_token", "reg_token", "dist_token", "pos_embed"):
                normal(p, 0.5)
            elif leaf == "gamma":
                uniform(p)
            elif leaf == "bias":
                normal(p, 0.02)
            elif name.endswith("attn.qkv.weight"):
                normal(p, p.shape[1] ** -0.5)
            elif name in ("patch_embed.proj.weight", "stem.0.weight"):
                normal(p, p[0].numel() ** -0.5)
            else:
                assert leaf == "weight" and p.dim() >= 2, name
                normal(p, 0.02)


def rel_err(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def outputs(model, x):
    """(logits, embedding) in eval mode and train-mode logits."""
    with torch.no_grad():
        model.eval()
        features = model.forward_features(x)  # model(x) is forward_head(forward_features(x))
        emb = model.forward_head(features, pre_logits=True)
        logits = model.forward_head(features)
        model.train()
        train = model(x)
        model.eval()
    # clone: torch.save writes a view's whole storage (the class token is one of T tokens)
    return logits.clone(), emb.clone(), train.clone()


def make_case(timm, name, family, default, gen, out):
    model = build(timm, name, family)
    randomize(model, gen)
    sd = model.state_dict()
    torch.save(sd, f"{out}/{name}.pth")
    if family == "vit":
        from timm.models.vision_transformer import checkpoint_filter_fn
        filt = checkpoint_filter_fn
        if name.startswith("deit"):  # timm.models.deit's pretrained_filter_fn
            filt = functools.partial(checkpoint_filter_fn, adapt_layer_scale=True)
        dyn = build(timm, name, family, dynamic=True, weights=sd).eval()
    expected = {}
    notes = []
    for tag, size in (SIZES_PATCH14 if "patch14" in name else SIZES).items():
        hw = size or (default, default)
        # One image at dinov2's 518 x 518 (1369 tokens: most of the suite's time here); the
        # other sizes of the same model keep two, which a mix-up across the batch would show.
        batch = 1 if hw[0] * hw[1] > 300 * 300 else BATCH
        x = torch.randn((batch, 3) + tuple(hw), generator=torch.Generator().manual_seed(3))
        expected[f"input_{tag}"] = x
        if family == "vit" and size is not None:
            sized = build(timm, name, family, size=hw, weights=sd, filt=filt)
        else:
            sized = model
        logits, emb, train = outputs(sized, x)
        expected[f"eval_logits_{tag}"] = logits
        expected[f"eval_embedding_{tag}"] = emb
        expected[f"train_logits_{tag}"] = train
        assert rel_err(train, logits) < 1e-6, (name, tag)  # no dropout, no batch statistics
        if family == "vit":
            with torch.no_grad():
                d = dyn(x)
            expected[f"dyn_eval_logits_{tag}"] = d.clone()
            diff = rel_err(d, logits)
            assert diff < 1e-5, (name, tag, diff)
            notes.append(f"{tag} {hw[0]}x{hw[1]} dynamic-vs-loaded {diff:.2e}")
        else:
            notes.append(f"{tag} {hw[0]}x{hw[1]}")
    torch.save(expected, f"{out}/{name}_expected.pth")
    print("wrote", name, "(" + ", ".join(notes) + ")", flush=True)


def make_posembed(timm, gen, out):
    from timm.layers import resample_abs_pos_embed
    cases = {}
    for k, (nh, nw, oh, ow, prefix) in enumerate(POSEMBED_CASES):
        x = torch.randn((1, prefix + oh * ow, POSEMBED_DIM), generator=gen)
        cases[f"posembed_in_{k}"] = x
        cases[f"posembed_out_{k}"] = resample_abs_pos_embed(x, (nh, nw), (oh, ow), prefix)
        cases[f"posembed_grid_{k}"] = torch.tensor([nh, nw, oh, ow, prefix], dtype=torch.int64)
    torch.save(cases, f"{out}/posembed.pth")
    print("wrote posembed", f"({len(POSEMBED_CASES)} resamplings)")


def make(out, oracles):
    timm = import_timm(oracles)
    if timm is None:
        for case in list(CASES) + ["posembed"]:
            print("skipped", case, "(no timm oracle)")
        return
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(7)
    make_posembed(timm, gen, out)
    for case, (family, default) in CASES.items():
        make_case(timm, case, family, default, gen, out)


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "")
    elif len(sys.argv) >= 5 and len(sys.argv) % 2 == 1 and sys.argv[1] == "weights":
        timm = import_timm(sys.argv[-1])
        for arch, out in zip(sys.argv[2:-1:2], sys.argv[3:-1:2]):
            family = "convnext" if arch.startswith("convnext") else "vit"
            model = build(timm, arch, family)
            randomize(model, torch.Generator().manual_seed(11))
            torch.save(model.state_dict(), out)
    else:
        sys.exit(__doc__)
