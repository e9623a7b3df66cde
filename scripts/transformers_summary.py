#!/usr/bin/python3
"""Tables and plot of scripts/transformers_experiment.sh: per architecture, the held-out sweep
(top-1 per test resolution, without and with fine-tuning, mean ± sd over seeds), the test-set
rows of scripts/demo.sh (train resolution vs the chosen one), the FixRes gain per seed, and the
ViT's fine-tuning scopes at the chosen resolution. Writes OUT/transformers_sweep.svg (held-out
top-1 against test resolution, mean over seeds, both architectures).
Usage: transformers_summary.py OUT   (OUT/<arch>/seed<k>/{summary.json, sweep/sweep.json})
"""
import glob
import json
import os
import statistics
import sys


def ms(values):
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.2f} ± {sd:.2f}"


def runs(out, arch):
    dirs = sorted(d for d in glob.glob(f"{out}/{arch}/seed*") if os.path.exists(f"{d}/summary.json"))
    return [(json.load(open(f"{d}/summary.json")), json.load(open(f"{d}/sweep/sweep.json")), d)
            for d in dirs]


def arch_tables(arch, rs):
    summaries = [s for s, _, _ in rs]
    sweeps = [w for _, w, _ in rs]
    train = summaries[0]["train_size"]
    print(f"### {arch}: seeds {', '.join(str(s['seed']) for s in summaries)}; train resolution "
          f"{train} px\n")
    print("Held-out split (top-1, mean ± sd over seeds):\n")
    print("| test res | no fine-tuning | FixRes fine-tuned |")
    print("|---|---|---|")
    curves = {"plain": [], "tuned": []}
    for i, row in enumerate(sweeps[0]["rows"]):
        plain = [w["rows"][i]["top1"] for w in sweeps]
        tuned = [w["rows"][i]["top1_finetuned"] for w in sweeps]
        curves["plain"].append((row["size"], statistics.mean(plain)))
        curves["tuned"].append((row["size"], statistics.mean(tuned)))
        label = f"**{row['size']} (train)**" if row["size"] == train else str(row["size"])
        print(f"| {label} | {ms(plain)} | {ms(tuned)} |")
    print(f"\nChosen on the held-out split per seed: without fine-tuning "
          f"{[w['best_plain'] for w in sweeps]}, with fine-tuning "
          f"{[w['best_finetuned'] for w in sweeps]}.\n")
    print("Test set (10,000 images):\n")
    print("| setting | test res per seed | top-1 per seed | mean ± sd |")
    print("|---|---|---|---|")
    for k, row in enumerate(summaries[0]["rows"]):
        res = [s["rows"][k][1] for s in summaries]
        top = [s["rows"][k][2] for s in summaries]
        print(f"| {row[0]} | {', '.join(map(str, res))} | {', '.join(f'{t:.2f}' for t in top)} "
              f"| {ms(top)} |")
    gain = [s["rows"][3][2] - s["rows"][0][2] for s in summaries]
    res_only = [s["rows"][3][2] - s["rows"][1][2] for s in summaries]
    print(f"\nFixRes gain (chosen resolution fine-tuned minus train resolution, no fine-tuning) "
          f"per seed: {', '.join(f'{g:+.2f}' for g in gain)}; mean {ms(gain)} points. Of which "
          f"the resolution (both fine-tuned): {', '.join(f'{g:+.2f}' for g in res_only)}; mean "
          f"{ms(res_only)}.\n")
    return curves


def scope_table(rs):
    rows = {}
    for s, _, d in rs:
        for scope in ("head", "head-pos", "all"):
            f = f"{d}/scope_{scope}.json"
            if os.path.exists(f):
                rows.setdefault(scope, []).append(json.load(open(f))["results"][0]["top1"])
    if not rows:
        return
    print("ViT fine-tuning scopes at the chosen resolution (test set top-1; SGD, the sweep's "
          "iterations and rate):\n")
    print("| --finetune-scope | top-1 per seed | mean ± sd |")
    print("|---|---|---|")
    for scope, top in rows.items():
        print(f"| {scope} | {', '.join(f'{t:.2f}' for t in top)} | {ms(top)} |")
    print()


def svg(path, series):
    """Lines of (size, top-1) per label; a plain SVG (no plotting library needed)."""
    pts = [p for _, line in series for p in line]
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts) - 1, max(p[1] for p in pts) + 1
    W, H, L, B = 800, 400, 60, 50
    sx = lambda x: L + (x - x0) / max(x1 - x0, 1) * (W - L - 240)
    sy = lambda y: H - B - (y - y0) / max(y1 - y0, 1e-9) * (H - B - 20)
    colors = ["#1f77b4", "#aec7e8", "#d62728", "#ff9896", "#2ca02c", "#98df8a"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<line x1="{L}" y1="{H - B}" x2="{W - 240}" y2="{H - B}" stroke="black"/>',
           f'<line x1="{L}" y1="20" x2="{L}" y2="{H - B}" stroke="black"/>',
           f'<text x="{(W - 240 + L) / 2}" y="{H - 12}" text-anchor="middle">test resolution (px)</text>',
           f'<text x="15" y="{H / 2}" transform="rotate(-90 15 {H / 2})" text-anchor="middle">held-out top-1 (%)</text>']
    for x in sorted({p[0] for p in pts}):
        out.append(f'<text x="{sx(x):.1f}" y="{H - B + 16}" text-anchor="middle">{x}</text>')
    for k in range(6):
        y = y0 + (y1 - y0) * k / 5
        out.append(f'<text x="{L - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.1f}</text>')
    for i, (label, line) in enumerate(series):
        c = colors[i % len(colors)]
        d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in line)
        dash = ' stroke-dasharray="5,3"' if "no fine" in label else ""
        out.append(f'<polyline points="{d}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{W - 230}" y="{30 + 18 * i}" fill="{c}">{label}</text>')
    out.append("</svg>")
    open(path, "w").write("\n".join(out) + "\n")


def main(out):
    series = []
    for arch in ("vit_demo", "convnext_demo"):
        rs = runs(out, arch)
        if not rs:
            continue
        curves = arch_tables(arch, rs)
        if arch == "vit_demo":
            scope_table(rs)
        series += [(f"{arch} no fine-tuning", curves["plain"]),
                   (f"{arch} fine-tuned", curves["tuned"])]
    if series:
        svg(f"{out}/transformers_sweep.svg", series)
        print(f"plot: {out}/transformers_sweep.svg")


if __name__ == "__main__":
    main(sys.argv[1])
