#!/usr/bin/python3
"""References for the EMA weights, mixup / CutMix and the soft-target loss, in PyTorch 1.13 as
torchvision 0.14's classification references (references/classification/train.py, utils.py,
transforms.py) use them. Each command reads what the C++ test wrote (torch.load) and writes the
expected values (torch.save).
  ema_mix_reference.py ema IN OUT   the references' ExponentialMovingAverage: decay adjustment,
        torch.optim.swa_utils.AveragedModel(model, avg_fn=ema_avg, use_buffers=True), updated
        when i % model_ema_steps == 0, n_averaged reset to 0 while epoch < warm-up epochs; the
        model's state at each step comes from IN
  ema_mix_reference.py mix IN OUT   RandomMixup / RandomCutmix (p = 1) after their random draws,
        with the drawn lambda and (r_x, r_y) given in IN
  ema_mix_reference.py ce IN OUT    torch.nn.functional.cross_entropy with class indices and with
        probabilities, with label smoothing, the loss and its gradient, and the smoothing formula
"""
import math
import sys

import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel

torch.set_num_threads(1)


class Holder(torch.nn.Module):
    """A module with the given parameters and buffers (names with '.' flattened), in order."""

    def __init__(self, state, params):
        super().__init__()
        for k, v in state.items():
            name = k.replace(".", "__")
            if k in params:
                self.register_parameter(name, torch.nn.Parameter(v.clone()))
            else:
                self.register_buffer(name, v.clone())

    def load(self, state):
        with torch.no_grad():
            for k, v in state.items():
                getattr(self, k.replace(".", "__")).copy_(v)


def ema(inp, out):
    d = torch.load(inp)
    c = d["config"]
    # train.py: the decay adjustment.
    adjust = c["world_size"] * c["batch_size"] * c["model_ema_steps"] / c["epochs"]
    alpha = 1.0 - c["model_ema_decay"]
    alpha = min(1.0, alpha * adjust)
    decay = 1.0 - alpha

    # utils.ExponentialMovingAverage.
    def ema_avg(avg_model_param, model_param, num_averaged):
        return decay * avg_model_param + (1 - decay) * model_param

    snapshots, schedule = d["snapshots"], d["schedule"]
    model = Holder(snapshots[0], set(d["params"]))
    model_ema = AveragedModel(model, avg_fn=ema_avg, use_buffers=True)
    updates = 0
    # train_one_epoch: after the optimizer step of batch i.
    for (epoch, i), state in zip(schedule, snapshots):
        model.load(state)
        if i % c["model_ema_steps"] == 0:
            model_ema.update_parameters(model)
            updates += 1
            if epoch < c["lr_warmup_epochs"]:
                model_ema.n_averaged.fill_(0)
    sd = {k.replace("__", "."): v for k, v in model_ema.state_dict().items()}
    torch.save({"decay": decay, "updates": updates, "state": sd}, out)
    print("decay", decay, "updates", updates, "n_averaged", int(model_ema.n_averaged))


def mixup(batch, target, lam):
    batch_rolled = batch.roll(1, 0)
    target_rolled = target.roll(1, 0)
    batch_rolled.mul_(1.0 - lam)
    batch.mul_(lam).add_(batch_rolled)
    target_rolled.mul_(1.0 - lam)
    target.mul_(lam).add_(target_rolled)
    return batch, target, lam, [0, 0, 0, 0]


def cutmix(batch, target, lam, rx, ry):
    batch_rolled = batch.roll(1, 0)
    target_rolled = target.roll(1, 0)
    H, W = batch.shape[-2], batch.shape[-1]
    r_x = torch.tensor([rx])  # what torch.randint(W, (1,)) returned
    r_y = torch.tensor([ry])
    r = 0.5 * math.sqrt(1.0 - lam)
    r_w_half = int(r * W)
    r_h_half = int(r * H)
    x1 = int(torch.clamp(r_x - r_w_half, min=0))
    y1 = int(torch.clamp(r_y - r_h_half, min=0))
    x2 = int(torch.clamp(r_x + r_w_half, max=W))
    y2 = int(torch.clamp(r_y + r_h_half, max=H))
    batch[:, :, y1:y2, x1:x2] = batch_rolled[:, :, y1:y2, x1:x2]
    lam = float(1.0 - (x2 - x1) * (y2 - y1) / (W * H))
    target_rolled.mul_(1.0 - lam)
    target.mul_(lam).add_(target_rolled)
    return batch, target, lam, [x1, y1, x2, y2]


def mix(inp, out):
    d = torch.load(inp)
    results = []
    for case in d["cases"]:
        batch = d["images"].clone()
        target = F.one_hot(d["labels"], num_classes=d["num_classes"]).to(dtype=batch.dtype)
        if case["kind"] == "mixup":
            b, t, lam, box = mixup(batch, target, case["lambda"])
        else:
            b, t, lam, box = cutmix(batch, target, case["lambda"], case["r_x"], case["r_y"])
        results.append({"images": b, "targets": t, "lambda": lam, "box": torch.tensor(box)})
    torch.save(results, out)
    print(len(results), "cases")


def ce(inp, out):
    d = torch.load(inp)
    logits, probs, labels = d["logits"], d["probs"], d["labels"]
    C = logits.shape[1]
    results = []
    for ls in d["label_smoothing"]:
        row = {}
        for name, target in (("soft", probs), ("hard", labels)):
            x = logits.clone().requires_grad_(True)
            loss = F.cross_entropy(x, target, label_smoothing=ls)
            loss.backward()
            row[name + "_loss"] = loss.detach()
            row[name + "_grad"] = x.grad
        # The formula: probabilities smoothed as targets * (1 - ls) + ls / C, then the mean over
        # images of -sum(targets * log_softmax(logits)), in double precision.
        smoothed = probs.double() * (1 - ls) + ls / C
        row["soft_formula"] = -(smoothed * torch.log_softmax(logits.double(), 1)).sum(1).mean()
        results.append(row)
    torch.save(results, out)
    print(len(results), "label smoothings")


if __name__ == "__main__":
    {"ema": ema, "mix": mix, "ce": ce}[sys.argv[1]](sys.argv[2], sys.argv[3])
