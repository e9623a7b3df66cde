#!/usr/bin/python3
"""timm's layer-wise learning-rate decay of an architecture: each parameter's lr_scale from
timm.optim's param_groups_layer_decay (the model's group_matcher, fine grouping), one
"name scale" line a parameter.

Usage: layer_decay_reference.py ARCH DECAY ORACLES   (ORACLES: the folder holding timm's source)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_reference import import_timm  # noqa: E402

arch, decay, oracles = sys.argv[1], float(sys.argv[2]), sys.argv[3]
timm = import_timm(oracles)
if timm is None:
    sys.exit(f"no timm source at {oracles}")
from timm.optim._param_groups import param_groups_layer_decay  # noqa: E402

model = timm.create_model(arch, pretrained=False, num_classes=5)
for group in param_groups_layer_decay(model, layer_decay=decay):
    ids = {id(p) for p in group["params"]}
    for name, p in model.named_parameters():
        if id(p) in ids:
            print(name, repr(group["lr_scale"]))
