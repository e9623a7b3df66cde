#!/usr/bin/python3
"""Checks on fixres's transformer checkpoints, read with torch.load (fixres checkpoints hold the
state dict under "model").

BEFORE AFTER SCOPE      which tensors fine-tuning changed: SCOPE head -> exactly head.* and the
                        final norm (norm.* or fc_norm.*); head-pos and recipe (a ViT's default)
                        -> those and pos_embed; all -> every tensor. Prints the changed names;
                        exit 1 when they differ from the scope's.
damage IN OUT           IN's state dict with one patch token cut from pos_embed (no patch grid).
add-reg IN OUT          IN's state dict with 4 register tokens added (reg_token).
"""
import sys

import torch


def state(path):
    sd = torch.load(path, map_location="cpu")
    return sd["model"] if "model" in sd else sd


def changed(before, after):
    assert before.keys() == after.keys(), (sorted(before.keys() ^ after.keys()))
    return sorted(k for k in before if not torch.equal(before[k], after[k]))


def expected(keys, scope):
    head = {k for k in keys if k.startswith(("head.", "head_dist.", "norm.", "fc_norm."))}
    if scope == "head":
        return sorted(head)
    if scope in ("head-pos", "recipe"):
        return sorted(head | {"pos_embed"})
    if scope == "all":
        return sorted(keys)
    raise SystemExit(f"unknown scope {scope}")


if __name__ == "__main__":
    if sys.argv[1] == "damage":
        sd = state(sys.argv[2])
        sd["pos_embed"] = sd["pos_embed"][:, :-1].clone()
        torch.save(sd, sys.argv[3])
    elif sys.argv[1] == "add-reg":
        sd = state(sys.argv[2])
        sd["reg_token"] = torch.zeros(1, 4, sd["pos_embed"].shape[-1])
        torch.save(sd, sys.argv[3])
    else:
        before, after = state(sys.argv[1]), state(sys.argv[2])
        got, want = changed(before, after), expected(before.keys(), sys.argv[3])
        print(f"{len(got)} of {len(before)} tensors changed: {', '.join(got[:6])}"
              f"{', ...' if len(got) > 6 else ''}")
        if got != want:
            print("expected:", want)
            sys.exit(1)
