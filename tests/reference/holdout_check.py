#!/usr/bin/python3
"""The held-out split `fixres holdout` carves, against its documented rule (data/Holdout.h),
implemented here from the rule alone: per class of n images (sorted by file name), round(f x n)
images (at least 1, at most n - 1) drawn by the first places of a Fisher-Yates shuffle whose draws come from
SplitMix64 seeded with seed ^ (0x632BE59BD9B4E019 * (class index + 1)). Also: no image lost or
duplicated, every class keeps an image to train on.
Usage: holdout_check.py BEFORE_LISTING DATA SPLIT FRACTION SEED
BEFORE_LISTING: the train/ files before, one class/file per line."""
import os, sys

M = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return state, z ^ (z >> 31)


def pick(n, count, seed, c):
    order = list(range(n))
    state = seed ^ ((0x632BE59BD9B4E019 * (c + 1)) & M)
    for i in range(count):
        state, r = splitmix64(state)
        j = i + r % (n - i)
        order[i], order[j] = order[j], order[i]
    return order[:count]


def listing(root):
    out = {}
    for c in sorted(os.listdir(root)):
        out[c] = sorted(os.listdir(os.path.join(root, c)))
    return out


def main():
    before_file, data, split, fraction, seed = sys.argv[1:6]
    fraction, seed = float(fraction), int(seed)
    before = {}
    for line in open(before_file).read().split():
        c, f = line.split("/", 1)
        before.setdefault(c, []).append(f)
    train, held = listing(os.path.join(data, "train")), listing(os.path.join(data, split))
    assert sorted(train) == sorted(before) == sorted(held), (sorted(train), sorted(held))
    for k, c in enumerate(sorted(before)):
        files = sorted(before[c])
        n = len(files)
        count = min(n - 1, max(1, int(fraction * n + 0.5)))
        want = sorted(files[i] for i in pick(n, count, seed, k))
        assert held[c] == want, (c, held[c], want)
        assert sorted(train[c] + held[c]) == files, c
        assert len(train[c]) >= 1 and len(held[c]) >= 1, c
    print(f"holdout: {sum(len(v) for v in held.values())} images as the rule picks them, none lost")


main()
