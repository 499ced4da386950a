#!/usr/bin/python3
"""The heat map of substitutions by models (issue 15), from optimized models.

    rule_heatmap.py OUT_PREFIX NAME=MODEL.opt.h5 ...

reads each optimized model's /optimize_rules table (rule as applied, its
row in the substitutions file, times it fired on the path to the result)
and writes OUT_PREFIX.csv and OUT_PREFIX.png, and prints the same table.
A NAME of the form FAMILY/MODEL marks its family (bench/rule_families.sh):
the map draws a line between families and names each over its columns.
A rule is a (row, text) pair: the text is the direction it was applied in,
and the two directions of one row are different rewrites. Rows are the
rules that fired in some model, those shared by most models first; columns
are the models in the order given. Needs Debian's python3-h5py and
python3-matplotlib (run with /usr/bin/python3).
"""
import csv
import sys

import h5py


def fired(path):
    """{(row, text): count} of one optimized model."""
    with h5py.File(path, "r") as f:
        if "optimize_rules" not in f:  # an unoptimized model file
            raise SystemExit(f"rule_heatmap.py: {path} has no /optimize_rules table")
        t = f["optimize_rules"][()]
    return {(int(r["row"]), r["rule"].decode()): int(r["count"]) for r in t}


def short(text, width=70):
    return text if len(text) <= width else text[: width - 3] + "..."


def main(argv):
    if len(argv) < 3 or any("=" not in a for a in argv[2:]):
        raise SystemExit(__doc__.split("\n\n")[1])
    prefix = argv[1]
    names, counts = [], []
    for arg in argv[2:]:
        name, path = arg.split("=", 1)
        names.append(name)
        counts.append(fired(path))
    rules = set().union(*counts)
    # Shared rules first (the ones every model family needs), then by use.
    order = sorted(rules, key=lambda r: (-sum(r in c for c in counts),
                                         -sum(c.get(r, 0) for c in counts), r[0], r[1]))
    grid = [[c.get(r, 0) for c in counts] for r in order]
    labels = [f"#{row} {short(text)}" for row, text in order]

    with open(prefix + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "rule", *names, "total", "models"])
        for (row, text), cells in zip(order, grid):
            w.writerow([row, text, *cells, sum(cells), sum(x > 0 for x in cells)])

    # The text table: counts, '.' for never, then the rule.
    width = max(6, *(len(n) for n in names))
    print(" ".join(f"{n:>{width}}" for n in names), f"{'total':>6}", " rule")
    for label, cells in zip(labels, grid):
        print(" ".join(f"{(x or '.'):>{width}}" for x in cells), f"{sum(cells):>6}", "", label)
    print(" ".join(f"{sum(x > 0 for x in col):>{width}}" for col in zip(*grid)) if grid else "",
          f"{len(order):>6}", " rules that fired, per model (all models: the total)")

    import matplotlib
    matplotlib.use("Agg")  # no display on a batch node
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    from matplotlib.colors import LogNorm

    nrow = max(len(order), 1)
    # Width: the labels (7 pt monospace, about 0.06 in a character), the
    # cells, the colour bar; height: a row of cells per rule.
    label_in = 0.06 * max((len(x) for x in labels), default=10)
    fig, ax = plt.subplots(figsize=(label_in + 0.55 * len(names) + 1.6, 1.8 + 0.22 * nrow))
    data = [[x if x else float("nan") for x in cells] for cells in grid] or [[float("nan")] * len(names)]
    top = max((x for cells in grid for x in cells), default=1)
    # Counts span 1 to tens: a log scale keeps single firings visible.
    im = ax.imshow(data, cmap="YlOrRd", norm=LogNorm(vmin=1, vmax=max(top, 2)), aspect="auto")
    ax.set_facecolor("#f4f4f4")  # cells where a rule never fired
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right")
    ax.set_yticks(range(len(labels)), labels, fontsize=7, family="monospace")
    for i, cells in enumerate(grid):
        for j, x in enumerate(cells):
            if x:
                ax.text(j, i, str(x), ha="center", va="center", fontsize=7,
                        color="white" if x > top ** 0.6 else "black")
    families = [n.split("/")[0] if "/" in n else "" for n in names]
    for j in range(1, len(names)):
        if families[j] != families[j - 1]:
            ax.axvline(j - 0.5, color="#333333", linewidth=1.2)
    start = 0
    for j in range(1, len(names) + 1):
        if j == len(names) or families[j] != families[start]:
            if families[start]:
                ax.text((start + j - 1) / 2, -0.7, families[start], ha="center", va="bottom",
                        fontsize=7, fontweight="bold")
            start = j
    ax.set_title("times each substitution fired, per model" +
                 (" (grouped by family)\n" if any(families) else ""), fontsize=9)
    bar = fig.colorbar(im, ax=ax, label="times fired", fraction=0.04, pad=0.02)
    # Whole counts on the log scale, no 4x10^0 labels.
    bar.set_ticks([t for t in (1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000) if t <= max(top, 2)])
    bar.ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%d"))
    bar.ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    bar.ax.tick_params(labelsize=7)
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=100)
    print(f"# wrote {prefix}.csv and {prefix}.png ({len(order)} rules x {len(names)} models)")


if __name__ == "__main__":
    main(sys.argv)
