"""torchvision's ResNeXt-101 32x16d (the WSL width of Mahajan et al. 2018, timm's
ig_resnext101_32x16d): every state-dict key with its shape, one "key d0,d1,..." line each, for
a 10-class classifier, then "parameters N". Built without initialising (nothing but the shapes is compared), so
that the 190M parameters cost no time.

Usage: resnext_wsl_reference.py WIDTH_PER_GROUP
"""
import sys

import torch
import torchvision


def no_init(*args, **kwargs):
    return None


# Shapes only: the constructors' initialisations are skipped.
for init in ("kaiming_normal_", "kaiming_uniform_", "constant_", "uniform_", "normal_"):
    setattr(torch.nn.init, init, no_init)
for module in (torch.nn.Conv2d, torch.nn.Linear, torch.nn.BatchNorm2d):
    module.reset_parameters = no_init
    if hasattr(module, "reset_running_stats"):
        module.reset_running_stats = no_init

width = int(sys.argv[1])
model = torchvision.models.resnet.ResNet(
    torchvision.models.resnet.Bottleneck, [3, 4, 23, 3], groups=32, width_per_group=width,
    num_classes=10)
for key, value in model.state_dict().items():
    print(key, ",".join(str(d) for d in value.shape))
print("parameters", sum(p.numel() for p in model.parameters()))
