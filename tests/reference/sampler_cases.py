#!/usr/bin/python3
"""Reference sampler layouts (JSON on stdout): torch.utils.data.DistributedSampler itself, exact
eval shards, and FixRes's RASampler (imnet_resnet50_scratch/samplers.py) re-implemented with its
permutations drawn from torch.randperm with a generator seeded by seed + epoch.

Each case: {"kind", "n", "world", "seed", "epoch", ..., "ranks": [[indices of rank 0], ...]}.
"""
import json, math
import torch
from torch.utils.data import DistributedSampler

cases = []
for n, world, shuffle, seed, epoch in [(10, 1, False, 0, 0), (10, 3, False, 0, 0), (10, 4, True, 0, 0),
                                      (10, 4, True, 0, 1), (17, 8, True, 5, 3), (3, 8, True, 1, 0),
                                      (1000, 6, True, 42, 7)]:
    ranks = []
    for r in range(world):
        s = DistributedSampler(list(range(n)), num_replicas=world, rank=r, shuffle=shuffle, seed=seed, drop_last=False)
        s.set_epoch(epoch)
        ranks.append(list(s))
    cases.append(dict(kind="distributed", n=n, world=world, shuffle=shuffle, seed=seed, epoch=epoch, pad=True, ranks=ranks))
    # Exact shards for evaluation: no padding.
    if shuffle:
        g = torch.Generator(); g.manual_seed(seed + epoch); order = torch.randperm(n, generator=g).tolist()
    else:
        order = list(range(n))
    cases.append(dict(kind="distributed", n=n, world=world, shuffle=shuffle, seed=seed, epoch=epoch, pad=False,
                      ranks=[order[r::world] for r in range(world)]))


def ra_layout(n, world, rank, seed, epoch, reps, len_factor, reference_length):
    """samplers.py RASampler.__iter__ with shuffle, permutations from a generator seeded seed + epoch."""
    g = torch.Generator(); g.manual_seed(seed + epoch)

    def shuffler():
        while True:
            for index in torch.randperm(n, generator=g).tolist():
                for _ in range(reps):
                    yield index
    it = shuffler()
    len_images = int(n * len_factor)
    indices = [next(it) for _ in range(len_images)]
    if reference_length:
        total = int(math.ceil(n * reps * 1.0 / world)) * world
    else:
        total = int(math.ceil(len_images / world)) * world
    indices += indices[:(total - len(indices))]
    assert len(indices) == total
    return indices[rank:total:world]


for n, world, seed, epoch, reps, lf, ref in [(10, 1, 0, 0, 3, 2.0, False), (10, 3, 0, 0, 3, 2.0, False),
                                             (10, 4, 1, 2, 3, 2.0, False), (101, 8, 3, 1, 3, 2.0, False),
                                             (101, 8, 3, 1, 3, 2.0, True), (50, 3, 9, 4, 3, 2.0, True),
                                             (40, 5, 2, 0, 2, 1.5, False), (40, 6, 2, 0, 3, 3.0, True)]:
    cases.append(dict(kind="ra", n=n, world=world, seed=seed, epoch=epoch, reps=reps, len_factor=lf,
                      reference_length=ref, ranks=[ra_layout(n, world, r, seed, epoch, reps, lf, ref) for r in range(world)]))
print(json.dumps(cases))
