#!/usr/bin/python3
"""Reference values for the optimizer tests, from Python torch.optim.

make OUTDIR   writes init.pth (random resnet_tiny weights, 5 classes, BatchNorm randomised as in
              models_reference.py), data.pth (5 batches x{k}, y{k}) and, for each case of CASES,
              <case>.pth: the state dict after 5 training steps (train mode, cross-entropy, one
              step per batch) with torch.optim's SGD / AdamW / RMSprop over the torchvision
              references' parameter groups (their utils.set_weight_decay: norm layers'
              parameters get norm_weight_decay, parameters named "bias" bias_weight_decay) and
              torch.nn.utils.clip_grad_norm_ before each step when clip > 0; and
              <case>_norms.pth: {"norms": the total gradient norm clip_grad_norm_ returned at
              each step}; groups.json: the parameter names of each group of the first case;
              scaler.json: torch.cuda.amp.GradScaler's default arguments; and, for each case
              and each of torch.optim's paths this torch has on the CPU (loop: foreach=False;
              foreach=True; fused=True: SGD and AdamW from torch 2.4), <case>_<path>20.pth: the state dict
              after 20 steps (batches 0-4 four times over), with impls.json listing the files
              made and the torch version.
"""
import inspect
import json
import os
import sys

import torch
from torch import nn

# One intra-op thread, as the C++ side under CTest: a reduction's order (its last digits)
# follows the thread count.
torch.set_num_threads(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models_reference import TinyResNet, randomize  # noqa: E402

CLASSES = 5
STEPS = 5
LONG_STEPS = 20  # the multi-tensor paths: 20 steps over the same 5 batches
# torch.optim's implementations: the loop over parameters, foreach=True, fused=True.
PATHS = {"loop": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}
# name: (opt, lr, momentum, weight_decay, nesterov, norm_weight_decay, bias_weight_decay, clip)
CASES = {
    "sgd_nesterov": ("sgd", 0.05, 0.9, 1e-2, True, 0.0, 1e-3, 0.0),
    "sgd_groups_clip": ("sgd", 0.1, 0.9, 1e-4, False, 0.0, None, 0.5),
    "adamw": ("adamw", 1e-2, 0.0, 0.05, False, 0.0, 0.01, 0.0),
    "rmsprop": ("rmsprop", 1e-2, 0.9, 1e-3, False, 1e-5, 0.0, 0.0),
    "rmsprop_clip": ("rmsprop", 1e-2, 0.9, 1e-3, False, None, None, 1.0),
}
NORM_CLASSES = (nn.modules.batchnorm._BatchNorm, nn.LayerNorm, nn.GroupNorm,
                nn.modules.instancenorm._InstanceNorm, nn.LocalResponseNorm)


def weight_decay_groups(model, weight_decay, norm_weight_decay, bias_weight_decay):
    """The references' set_weight_decay with custom_keys_weight_decay [("bias", ...)]."""
    groups = {"other": [], "norm": [], "bias": []}
    decay = {"other": weight_decay, "norm": norm_weight_decay, "bias": bias_weight_decay}

    def visit(module):
        for name, p in module.named_parameters(recurse=False):
            if not p.requires_grad:
                continue
            if bias_weight_decay is not None and name == "bias":
                groups["bias"].append(p)
            elif norm_weight_decay is not None and isinstance(module, NORM_CLASSES):
                groups["norm"].append(p)
            else:
                groups["other"].append(p)
        for child in module.children():
            visit(child)

    visit(model)
    return [{"params": ps, "weight_decay": decay[k]} for k, ps in groups.items() if ps]


def make_optimizer(opt, groups, lr, momentum, weight_decay, nesterov, **path):
    """path: {} (torch's default, the loop on the CPU), {"foreach": True} or {"fused": True}."""
    if opt == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum, weight_decay=weight_decay,
                               nesterov=nesterov, **path)
    if opt == "adamw":
        return torch.optim.AdamW(groups, lr=lr, weight_decay=weight_decay, **path)
    return torch.optim.RMSprop(groups, lr=lr, momentum=momentum, weight_decay=weight_decay,
                               eps=0.0316, alpha=0.9, **path)


def train(model, optimizer, data, steps, clip):
    """`steps` steps over data's batches in turn; the gradient norms clipping returned."""
    norms = []
    for k in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(data[f"x{k % STEPS}"]), data[f"y{k % STEPS}"])
        loss.backward()
        if clip > 0:
            norms.append(float(nn.utils.clip_grad_norm_(model.parameters(), clip)))
        optimizer.step()
    return norms


def make_paths(out, model, init, data):
    """<case>_<path>20.pth for the multi-tensor paths this torch has on the CPU."""
    made = {}
    for name, (opt, lr, momentum, wd, nesterov, norm_wd, bias_wd, clip) in CASES.items():
        for path, kwargs in PATHS.items():
            model.load_state_dict(init)
            model.train()
            groups = weight_decay_groups(model, wd, norm_wd, bias_wd)
            try:
                optimizer = make_optimizer(opt, groups, lr, momentum, wd, nesterov, **kwargs)
                train(model, optimizer, data, LONG_STEPS, clip)
            except (TypeError, RuntimeError, ValueError) as e:  # not in this torch, or not on CPU
                print(name, path, "not available:", str(e).splitlines()[0])
                continue
            torch.save(model.state_dict(), f"{out}/{name}_{path}{LONG_STEPS}.pth")
            made.setdefault(name, []).append(path)
    with open(f"{out}/impls.json", "w") as f:
        json.dump({"torch": torch.__version__, "steps": LONG_STEPS, "made": made}, f)


def make_inputs(out):
    """The model, its initial weights and the batches, written to OUT's init.pth and data.pth."""
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1)
    model = TinyResNet(CLASSES)
    randomize(model, gen)
    init = {k: v.clone() for k, v in model.state_dict().items()}
    torch.save(init, f"{out}/init.pth")
    data = {}
    for k in range(STEPS):
        data[f"x{k}"] = torch.randn(4, 3, 16, 16, generator=gen)
        data[f"y{k}"] = torch.randint(0, CLASSES, (4,), generator=gen)
    torch.save(data, f"{out}/data.pth")
    return model, init, data


def make(out):
    model, init, data = make_inputs(out)
    for name, (opt, lr, momentum, wd, nesterov, norm_wd, bias_wd, clip) in CASES.items():
        model.load_state_dict(init)
        model.train()
        groups = weight_decay_groups(model, wd, norm_wd, bias_wd)
        optimizer = make_optimizer(opt, groups, lr, momentum, wd, nesterov)
        norms = train(model, optimizer, data, STEPS, clip)
        torch.save(model.state_dict(), f"{out}/{name}.pth")
        torch.save({"norms": torch.tensor(norms, dtype=torch.float64)}, f"{out}/{name}_norms.pth")
        if name == "sgd_nesterov":
            names = {id(p): n for n, p in model.named_parameters()}
            roles = ["other", "norm", "bias"]
            with open(f"{out}/groups.json", "w") as f:
                json.dump({r: [names[id(p)] for p in g["params"]] for r, g in zip(roles, groups)}, f)
        print(name, "groups", [len(g["params"]) for g in groups], "norms", norms)
    make_paths(out, model, init, data)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "make":
        sys.exit(__doc__)
    make(sys.argv[2])
    defaults = {k: v.default for k, v in
                inspect.signature(torch.cuda.amp.GradScaler.__init__).parameters.items()
                if v.default is not inspect.Parameter.empty}
    with open(f"{sys.argv[2]}/scaler.json", "w") as f:
        json.dump({k: defaults[k] for k in
                   ("init_scale", "growth_factor", "backoff_factor", "growth_interval")}, f)
