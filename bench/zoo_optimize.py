#!/usr/bin/python3
"""The figures of bench/zoo_optimize.sh (issue 33), from taso-optimize's files.

    zoo_optimize.py row OPT.h5 RULES.h5
        prints one model's search as CSV fields (cost before and after,
        search seconds, ended by, graphs explored, rewrites, latency before
        and after, pairs won of pairs, kept input) and copies its
        /optimize_rules table and root attributes into RULES.h5, small
        enough to keep when OPT.h5 (the whole model with its weights) is
        deleted; rule_heatmap.py reads either.
    zoo_optimize.py report ROWS.csv
        prints the Markdown table of every model, then the distribution of
        the measured speedups (of the file written: 1 where the input was
        kept) and of the cost model's, and how the searches ended.

Needs Debian's python3-h5py (run with /usr/bin/python3).
"""
import csv
import math
import sys

import h5py

def attr(f, name, default="-"):
    if name not in f.attrs:
        return default
    v = f.attrs[name]
    return v.decode() if isinstance(v, bytes) else v


def row(opt, rules):
    with h5py.File(opt, "r") as f, h5py.File(rules, "w") as r:
        for k, v in f.attrs.items():
            r.attrs[k] = v
        if "optimize_rules" in f:
            f.copy("optimize_rules", r)
        vals = [attr(f, "cost_before_ms"), attr(f, "cost_after_ms"), attr(f, "search_seconds"),
                attr(f, "optimize_ended_by"), attr(f, "graphs_explored"),
                attr(f, "rewrites_applied"), attr(f, "latency_before_ms"),
                attr(f, "latency_after_ms"), attr(f, "latency_pairs_faster"),
                attr(f, "latency_pairs"), attr(f, "kept_input", 0)]
    out = []
    for v in vals:
        out.append(f"{v:.6g}" if isinstance(v, float) else str(v))
    print(",".join(out))


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def quantiles(xs):
    xs = sorted(xs)
    n = len(xs)

    def q(p):  # linear interpolation between order statistics
        i = p * (n - 1)
        lo = math.floor(i)
        return xs[lo] + (xs[min(lo + 1, n - 1)] - xs[lo]) * (i - lo)

    geo = math.exp(sum(math.log(x) for x in xs) / n)
    return f"min {xs[0]:.3f}, quartiles {q(0.25):.3f} / {q(0.5):.3f} / {q(0.75):.3f}, " \
           f"max {xs[-1]:.3f}, geometric mean {geo:.3f} ({n} models)"


def count(rows, pred):
    return sum(1 for r in rows if r["status"] == "ok" and pred(r))


def report(path):
    rows = list(csv.DictReader(open(path)))
    print("| network | family (source / graph) | nodes | search s | ended by | cost ms | x cost "
          "| run ms input | result | x measured | pairs won | written | ORT ms | taso/ORT |")
    print("|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    measured, written, costx = [], [], []
    ended = {}
    for r in rows:
        if r["status"] != "ok":
            print(f"| {r['network']} | {r['family']} / {r['graph_family']} | {r['nodes']} "
                  f"| | {r['status']} | | | | | | | | | |")
            continue
        cb, ca = num(r["cost_before"]), num(r["cost_after"])
        rb, ra = num(r["run_before"]), num(r["run_after"])
        kept = r["kept"] == "1"
        same = r["rewrites"] == "0"
        cx = cb / ca if cb and ca else None
        mx = rb / ra if rb and ra else None
        if cx:
            costx.append(cx)
        if mx:
            measured.append(mx)
        # the file written: the result, or the input where it was kept
        wx = 1.0 if kept or same or mx is None else mx
        written.append(wx)
        ended[r["ended_by"]] = ended.get(r["ended_by"], 0) + 1
        run = rb if kept or ra is None else ra
        if run is None:  # unchanged: the input timed alone
            run = num(r["plain_ms"])
        ort = num(r["ort_ms"])
        won = f"{r['won']}/{r['pairs']}" if r["pairs"] not in ("-", "0") else "-"
        print(f"| {r['network']} | {r['family']} / {r['graph_family']} | {r['nodes']} "
              f"| {float(r['search_s']):.1f} | {r['ended_by']} | {cb:.4g} -> {ca:.4g} "
              f"| {cx:.3f} | {rb if rb else r['plain_ms']} | {ra if ra else '-'} "
              f"| {f'{mx:.3f}' if mx else '-'} | {won} | {'unchanged' if same else 'input kept' if kept else 'result'} "
              f"| {r['ort_ms']} | {f'{run / ort:.2f}' if run and ort else '-'} |")
    print()
    if written:
        print(f"- measured speedup of the file written: {quantiles(written)}; "
              f"results written {count(rows, lambda r: r['kept'] == '0' and r['rewrites'] != '0')}, "
              f"inputs kept {count(rows, lambda r: r['kept'] == '1')}, "
              f"unchanged by the search {count(rows, lambda r: r['rewrites'] == '0')}")
    if measured:
        print(f"- measured speedup of the search's result (kept or not; where it rewrote): "
              f"{quantiles(measured)}")
        gain = [x for x in written if x > 1.0]
        print(f"- models sped up by 5% or more: {sum(x >= 1.05 for x in gain)}; "
              f"by 1% to 5%: {sum(1.01 <= x < 1.05 for x in gain)}")
    if costx:
        print(f"- cost model's speedup: {quantiles(costx)}")
    print("- searches ended by: " + ", ".join(f"{k} {v}" for k, v in sorted(ended.items())))
    bad = [r["network"] for r in rows if r["status"] != "ok"]
    if bad:
        print(f"- not optimized: {', '.join(bad)}")


def main(argv):
    if len(argv) == 4 and argv[1] == "row":
        row(argv[2], argv[3])
    elif len(argv) == 3 and argv[1] == "report":
        report(argv[2])
    else:
        raise SystemExit(__doc__.split("\n\n")[1])


if __name__ == "__main__":
    main(sys.argv)
