#!/usr/bin/python3
"""Search seconds against final cost for the rule choices (issue 17).

    rule_families.py ROWS.csv OUT.png

ROWS.csv (bench/rule_families.sh): model, family, choice (all, family,
random, zoo), seconds, cost. Each point is one search; its cost is shown
relative to the all-rules search of the same model (1.0: as good), so
that models of different sizes share one axis. Needs Debian's
python3-matplotlib (run with /usr/bin/python3).
"""
import csv
import sys


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    rows = list(csv.DictReader(open(argv[1])))
    best = {r["model"]: float(r["cost"]) for r in rows if r["choice"] == "all"}
    import matplotlib
    matplotlib.use("Agg")  # no display on a batch node
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    style = {"all": ("o", "#444444"), "family": ("s", "#d62728"), "random": ("^", "#1f77b4"),
             "zoo": ("D", "#2ca02c")}
    for choice, (marker, colour) in style.items():
        pts = [(float(r["seconds"]), float(r["cost"]) / best[r["model"]])
               for r in rows if r["choice"] == choice and best.get(r["model"])]
        if pts:
            ax.scatter([max(p[0], 1e-3) for p in pts], [p[1] for p in pts], marker=marker,
                       color=colour, label=f"{choice} rules", alpha=0.8)
    for r in rows:
        if r["choice"] == "family" and best.get(r["model"]):
            ax.annotate(r["model"].split(":")[0], (max(float(r["seconds"]), 1e-3),
                        float(r["cost"]) / best[r["model"]]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points")
    ax.axhline(1.01, color="#999999", linestyle=":", linewidth=1)
    ax.set_xscale("log")
    ax.set_xlabel("search seconds")
    ax.set_ylabel("final cost / all rules' final cost")
    ax.set_title("rule choices, leave-one-out (dotted: 1% above all rules)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[2], dpi=100)
    print(f"# wrote {argv[2]} ({len(rows)} searches)")


if __name__ == "__main__":
    main(sys.argv)
