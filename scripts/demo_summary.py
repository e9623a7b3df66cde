#!/usr/bin/python3
"""Aggregates demo runs over seeds (scripts/demo.sh with DEMO_SEED=0, 1, 2 ...) into the
markdown tables of docs/results.md: the held-out sweep and the test-set rows, mean and sample
standard deviation over seeds, and the FixRes gain per seed.
Usage: demo_summary.py RUN_DIR [RUN_DIR ...]   (each holding summary.json and sweep/sweep.json)
"""
import json
import statistics
import sys


def ms(values):
    mean = statistics.mean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:.2f} ± {sd:.2f}"


def main(dirs):
    sweeps = [json.load(open(f"{d}/sweep/sweep.json")) for d in dirs]
    summaries = [json.load(open(f"{d}/summary.json")) for d in dirs]
    seeds = [s["seed"] for s in summaries]
    train = summaries[0]["train_size"]
    print(f"Seeds {', '.join(map(str, seeds))}; train resolution {train} px.\n")
    print("Held-out split (top-1, mean ± sd over seeds):\n")
    sets = [e["name"] for e in sweeps[0].get("eval_sets", [])]
    print("| test res | crop | no fine-tuning | FixRes fine-tuned |" +
          "".join(f" {n}, fine-tuned |" for n in sets))
    print("|---|---|---|---|" + "---|" * len(sets))
    for i, r in enumerate(sweeps[0]["rows"]):
        size, crop = r["size"], r.get("crop_pct", 0.875)
        plain = [s["rows"][i]["top1"] for s in sweeps]
        tuned = [s["rows"][i]["top1_finetuned"] for s in sweeps]
        shifted = [ms([s["rows"][i]["sets"][n]["top1_finetuned"] for s in sweeps]) for n in sets]
        label = f"**{size} (train)**" if size == train else str(size)
        print(f"| {label} | {crop:g} | {ms(plain)} | {ms(tuned)} |" + "".join(f" {x} |" for x in shifted))
    print(f"\nBest resolution on the held-out split per seed: without fine-tuning "
          f"{[s['best_plain'] for s in sweeps]}, with fine-tuning {[s['best_finetuned'] for s in sweeps]}.\n")
    print("Test set (10,000 images), resolutions chosen on the held-out split:\n")
    # Rows [name, res, top-1] (older runs) or [name, res, top-1, crop, shifted top-1 or null].
    shifted = all(len(r) > 4 and r[4] is not None for s in summaries for r in s["rows"])
    print("| setting | test res per seed | crop per seed | top-1 per seed | mean ± sd |" +
          (" shifted top-1 mean ± sd |" if shifted else ""))
    print("|---|---|---|---|---|" + ("---|" if shifted else ""))
    names = [row[0] for row in summaries[0]["rows"]]
    for k, name in enumerate(names):
        res = [s["rows"][k][1] for s in summaries]
        crops = [f"{s['rows'][k][3]:g}" if len(s["rows"][k]) > 3 else "0.875" for s in summaries]
        top = [s["rows"][k][2] for s in summaries]
        tail = f" {ms([s['rows'][k][4] for s in summaries])} |" if shifted else ""
        print(f"| {name} | {', '.join(map(str, res))} | {', '.join(crops)} | "
              f"{', '.join(f'{t:.2f}' for t in top)} | {ms(top)} |" + tail)
    if shifted:
        held = [s["rows"][3][4] - s["rows"][0][4] for s in summaries]
        print(f"\nOn the shifted test set, chosen setting fine-tuned minus train resolution without "
              f"fine-tuning, per seed: {', '.join(f'{g:+.2f}' for g in held)}; mean {ms(held)} "
              f"points: the choice {'held' if statistics.mean(held) >= 0 else 'did not hold'} "
              f"on average.")
    gain = [s["rows"][3][2] - s["rows"][0][2] for s in summaries]
    res_only = [s["rows"][3][2] - s["rows"][1][2] for s in summaries]
    print(f"\nFixRes gain (chosen resolution fine-tuned minus train resolution, no fine-tuning), "
          f"per seed: {', '.join(f'{g:+.2f}' for g in gain)}; mean {ms(gain)} points.")
    print(f"Of which the test size and crop (chosen minus train resolution, both fine-tuned): "
          f"{', '.join(f'{g:+.2f}' for g in res_only)}; mean {ms(res_only)} points.")
    if all(len(s["rows"]) > 4 for s in summaries):
        cal = [s["rows"][4][2] - s["rows"][0][2] for s in summaries]
        print(f"BN calibration without labels at the chosen resolution (minus train resolution, no "
              f"fine-tuning): {', '.join(f'{g:+.2f}' for g in cal)}; mean {ms(cal)} points, i.e. "
              f"{statistics.mean(cal) / statistics.mean(gain) * 100:.0f}% of the FixRes gain.")
    base = [s["rows"][0][2] for s in summaries]
    print(f"Run-to-run noise of the baseline (train resolution, no fine-tuning): sd "
          f"{statistics.stdev(base) if len(base) > 1 else 0.0:.2f} points.")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: demo_summary.py RUN_DIR [RUN_DIR ...]")
    main(sys.argv[1:])
