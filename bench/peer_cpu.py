#!/usr/bin/python3
"""Runs bench/peers/pipeline_peer.py with its clock switched to process CPU time, so that its
images/s is per CPU-second like `fixres bench data --cpu-time` (fair on a loaded machine).
Usage: peer_cpu.py PEERS_DIR [pipeline_peer.py arguments...]"""
import sys, time
sys.path.insert(0, sys.argv[1])
sys.argv = ["pipeline_peer.py"] + sys.argv[2:]
time.perf_counter = time.process_time
import pipeline_peer  # noqa: E402
pipeline_peer.main()
