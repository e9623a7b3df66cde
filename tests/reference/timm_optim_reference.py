#!/usr/bin/python3
"""Reference values for LARS and LAMB, from timm.optim's Lars and Lamb.

Usage: timm_optim_reference.py OUTDIR ORACLES

timm is the installed package when this Python has one, else the source in the folder ORACLES
(its timm/ first on sys.path); without either, prints "no timm" and exits 0 with nothing written.
Writes init.pth and data.pth as optim_reference.py makes them (the same resnet_tiny weights and 5
batches), and, for each case of CASES, <case>20.pth: the state dict after 20 training steps
(batches 0-4 four times over, train mode, cross-entropy) with timm's optimizer over the
torchvision references' parameter groups (norm layers' parameters and biases in groups without
weight decay, as timm's create_optimizer filters them); and timm.json: timm's version and where
it came from.
"""
import json
import os
import sys

import torch

torch.set_num_threads(1)  # as the C++ side under CTest
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from optim_reference import make_inputs, train, weight_decay_groups  # noqa: E402

STEPS = 20
# name: (optimizer, lr, momentum, weight_decay, nesterov, the optimizer's own settings)
CASES = {
    "lars": ("lars", 2.0, 0.9, 1e-2, False, {}),
    "lars_nesterov": ("lars", 1.0, 0.9, 5e-2, True, {}),
    "lamb": ("lamb", 2e-2, 0.0, 1e-2, False, {}),
    # Their own settings away from timm's defaults (--lars-trust-coeff, --lamb-beta1/2).
    "lars_trust": ("lars", 0.5, 0.9, 1e-2, False, {"trust_coeff": 0.01}),
    "lamb_betas": ("lamb", 2e-2, 0.0, 1e-2, False, {"betas": (0.8, 0.99)}),
}


def import_timm(oracles):
    try:
        import timm  # noqa: F401
        return "pypi"
    except ImportError:
        pass
    if oracles and os.path.isfile(os.path.join(oracles, "timm", "__init__.py")):
        sys.path.insert(0, oracles)
        return "source"
    return None


def make(out, oracles):
    where = import_timm(oracles)
    if where is None:
        print("no timm")
        return
    import timm
    from timm.optim import Lamb, Lars
    model, init, data = make_inputs(out)
    for name, (opt, lr, momentum, wd, nesterov, own) in CASES.items():
        model.load_state_dict(init)
        model.train()
        groups = weight_decay_groups(model, wd, 0.0, 0.0)
        if opt == "lars":
            optimizer = Lars(groups, lr=lr, momentum=momentum, nesterov=nesterov, **own)
        else:
            optimizer = Lamb(groups, lr=lr, **own)
        train(model, optimizer, data, STEPS, 0.0)
        torch.save(model.state_dict(), f"{out}/{name}{STEPS}.pth")
    with open(f"{out}/timm.json", "w") as f:
        json.dump({"timm": timm.__version__, "from": where, "torch": torch.__version__,
                   "steps": STEPS}, f)
    print("timm", timm.__version__, "from", where)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    make(sys.argv[1], sys.argv[2])
