#!/usr/bin/python3
"""FFCV's progressive resizing (ffcv-imagenet train_imagenet.py, get_resolution) with numpy, the
stride in place of its 32. Reads lines "min max start end epoch stride" on stdin, prints the
resolution of each."""
import sys
import numpy as np


def get_resolution(min_res, max_res, start_ramp, end_ramp, epoch, stride):
    assert min_res <= max_res
    if epoch <= start_ramp:
        return min_res
    if epoch >= end_ramp:
        return max_res
    interp = np.interp([epoch], [start_ramp, end_ramp], [min_res, max_res])
    return int(np.round(interp[0] / stride)) * stride


for line in sys.stdin:
    if line.strip():
        print(get_resolution(*map(int, line.split())))
