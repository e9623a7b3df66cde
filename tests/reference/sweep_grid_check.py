#!/usr/bin/env python3
"""Checks a sweep folder's sweep_grid.svg against its sweep.json, by other code than fixres's.

sweep_grid_check.py FOLDER
    sweep_grid.svg holds one panel (a nested <svg>) per evaluation: "no fine-tuning", then with
    fine-tuning "FixRes fine-tuned" when sweep.json's rows carry top1_finetuned. In each panel:
    the column labels are the sizes in the rows' order, the row labels the crop fractions of
    crop_pcts (with several precisions, "PRECISION, CROP" for each precision and crop, in that
    order); every (setting, size) cell's data-value is that row's top-1 (top1_finetuned in the
    second panel) within 5e-5 and its text the value to one decimal; a higher top-1 never gets a
    lighter fill; the colours span the lower Tukey fence of the panel's values (Q1 - 1.5 IQR) to
    its best, every value at or under the fence has the lightest fill, and the legend names both; the hatched cells are exactly those outside sweep.json's budget (latency_ms <=
    max_latency_ms, images_per_s >= min_throughput, shift_ok with max_shift_loss) and a boundary line runs between each
    allowed and ruled-out neighbour; exactly one cell is marked, in the last panel, at
    (chosen, chosen_crop_pct), or none when chosen is null. Prints "grid of R x C cells, P
    panels equal to sweep.json"; exit 1 with the first difference.
"""
import json
import sys

import numpy as np
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
folder = sys.argv[1]
sweep = json.load(open(f"{folder}/sweep.json"))
root = ET.parse(f"{folder}/sweep_grid.svg").getroot()
rows = sweep["rows"]
crops = sweep["crop_pcts"]
precisions = sweep.get("precisions", [sweep.get("precision", "fp32")])
settings = [(p, c) for p in precisions for c in crops]
sizes = []
for r in rows:
    if r["size"] not in sizes:
        sizes.append(r["size"])
cell_of = {(settings.index((r.get("precision", precisions[0]), r["crop_pct"])), sizes.index(r["size"])): r
           for r in rows}
assert len(cell_of) == len(settings) * len(sizes) == len(rows), "rows are not a size x setting grid"


def row_label(text):
    if len(precisions) == 1:
        return (precisions[0], float(text))
    p, c = text.split(", ")
    return (p, float(c))


finetuned = "top1_finetuned" in rows[0]
panels = root.findall(f"{NS}svg")
assert len(panels) == (2 if finetuned else 1), f"{len(panels)} panels"
budget = sweep["budget"]


def allowed(r):
    if "max_shift_loss" in budget and not r["shift_ok"]:
        return False
    if "max_latency_ms" in budget and not r.get("latency_ms", float("inf")) <= budget["max_latency_ms"]:
        return False
    if "min_throughput" in budget and not r.get("images_per_s", 0) >= budget["min_throughput"]:
        return False
    return True


def luminance(fill):
    return sum(int(fill[i:i + 2], 16) for i in (1, 3, 5))


def texts(panel, cls):
    return [t.text for t in panel.iter(f"{NS}text") if t.get("class") == cls]


marked_total = 0
for p, panel in enumerate(panels):
    key = "top1_finetuned" if p == 1 else "top1"
    assert texts(panel, "column-label") == [str(s) for s in sizes], texts(panel, "column-label")
    assert [row_label(t) for t in texts(panel, "row-label")] == settings, texts(panel, "row-label")
    cells = {(int(c.get("data-row")), int(c.get("data-column"))): c
             for c in panel.iter(f"{NS}rect") if c.get("class") == "cell"}
    assert set(cells) == set(cell_of), sorted(cells)
    values = texts(panel, "cell-text")
    fills = []
    for (i, j), c in sorted(cells.items()):
        want = cell_of[(i, j)][key]
        got = float(c.get("data-value"))
        assert abs(got - want) <= 5e-5, f"panel {p} cell {i},{j}: {got} vs {want}"
        assert values[i * len(sizes) + j] == f"{want:.1f}", (values[i * len(sizes) + j], want)
        fills.append((want, luminance(c.get("fill"))))
    for a in fills:
        for b in fills:
            assert not (a[0] > b[0] and a[1] > b[1]), f"panel {p}: {a} is lighter than {b}"
    # The colours span the lower Tukey fence (Q1 - 1.5 IQR, numpy's linear quantiles) to the best:
    # every value at or under it has the lightest fill, and the legend says so.
    vals = sorted(v for v, _ in fills)
    q1, q3 = (float(np.quantile(vals, q)) for q in (0.25, 0.75))
    lo, hi = max(vals[0], q1 - 1.5 * (q3 - q1)), vals[-1]
    legend = [t for t in panel.iter(f"{NS}text") if t.get("class") == "legend"]
    assert len(legend) == 1, f"panel {p}: {len(legend)} legends"
    assert abs(float(legend[0].get("data-lo")) - lo) <= 5e-5, (legend[0].get("data-lo"), lo)
    assert abs(float(legend[0].get("data-hi")) - hi) <= 5e-5, (legend[0].get("data-hi"), hi)
    clipped = " or less" if vals[0] < lo else ""
    assert legend[0].text == f"colours: {lo:.1f}{clipped} (lightest) to {hi:.1f} (darkest)", legend[0].text
    lightest = max(l for _, l in fills)
    for v, l in fills:
        if v <= lo and hi > lo:
            assert l == lightest, f"panel {p}: {v} at or under the fence {lo} is not the lightest"
    ruled = {(int(c.get("data-row")), int(c.get("data-column")))
             for c in panel.iter(f"{NS}rect") if c.get("class") == "over-budget"}
    want_ruled = {k for k, r in cell_of.items() if budget and not allowed(r)}
    assert ruled == want_ruled, f"panel {p}: hatched {sorted(ruled)}, outside the budget {sorted(want_ruled)}"
    edges = sum(1 for (i, j) in cell_of for (di, dj) in ((0, 1), (1, 0))
                if (i + di, j + dj) in cell_of and ((i, j) in ruled) != ((i + di, j + dj) in ruled))
    drawn = sum(1 for e in panel.iter(f"{NS}line") if e.get("class") == "budget-edge")
    assert drawn == edges, f"panel {p}: {drawn} boundary lines for {edges} boundaries"
    for m in panel.iter(f"{NS}rect"):
        if m.get("class") != "marked":
            continue
        marked_total += 1
        assert p == len(panels) - 1, "the choice is marked in a panel that does not decide"
        got = (int(m.get("data-row")), int(m.get("data-column")))
        chosen_setting = (sweep.get("chosen_precision", precisions[0]), sweep["chosen_crop_pct"])
        want = (settings.index(chosen_setting), sizes.index(sweep["chosen"]))
        assert got == want, f"marked {got}, chosen {want}"
assert marked_total == (0 if sweep["chosen"] is None else 1), f"{marked_total} marked cells"
print(f"grid of {len(settings)} x {len(sizes)} cells, {len(panels)} panels equal to sweep.json")
