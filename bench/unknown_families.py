#!/usr/bin/env python3
"""Sorts the unknown substitutions of a taso-verify output into families.

Usage: build/bin/taso-show SUBSTITUTIONS.h5 | python3 bench/unknown_families.py [EXAMPLES]

Reads taso-show's listing and prints, per family, how many unknowns it
holds (and EXAMPLES lines of each). The families (issue 12, section 4),
first match wins:
  A   an operator over constants alone (taso-generate no longer forms them)
  A2  conv2d whose data computes from weights (w*) and constants alone (idem)
  B   two or more outputs, one the same on both sides
  R   equal once nested concats on one axis are flattened (concat nesting)
  I   const_imm (diagonal matrix) algebra
  S   computed from s0 and constants alone (scalar algebra)
  S2  relu of a scalar inside smul
  P   relu and smul of a nonnegative constant
  CC  other pairs with a concat
  O   the rest
A suffix [weights only] marks pairs that read no input but w* ones."""
import collections
import re
import sys

CONSTS = ("const_one", "const_iconv", "const_pool", "const_imm")


def is_param(n):
    return not n[1] and re.match(r"^(\d+|k=|shape=|act=|s=|pad=|layout=)", n[0]) is not None


def parse(s, i=0):
    j = i
    while j < len(s) and s[j] not in "(),":
        j += 1
    name = s[i:j].strip()
    if j < len(s) and s[j] == "(":
        args, j = [], j + 1
        while True:
            a, j = parse(s, j)
            args.append(a)
            j += 1
            if s[j - 1] == ")":
                return (name, args), j
    return (name, []), j


def parse_list(s):
    out, i = [], 0
    while i < len(s):
        n, i = parse(s, i)
        out.append(n)
        i += 1
    return out


def operands(n):
    return [a for a in n[1] if not is_param(a)]


def reads(n, acc):
    if not n[1] and not is_param(n) and n[0] not in CONSTS:
        acc.add(n[0])
    for a in operands(n):
        reads(a, acc)
    return acc


def ops(n, acc):
    if n[1] or n[0] in CONSTS:
        acc.add(n[0])
    for a in n[1]:
        ops(a, acc)
    return acc


def const_op(n):  # an operator over constants alone somewhere in n
    if n[0] in CONSTS or not n[1]:
        return False
    return not reads(n, set()) or any(const_op(a) for a in operands(n))


def conv_on_weights(n):
    if n[0] == "conv2d" and all(x.startswith("w") for x in reads(operands(n)[0], set())):
        return True
    return any(conv_on_weights(a) for a in operands(n))


def flat(n):
    if n[0] == "concat":
        axis, kids = n[1][0], []
        for a in n[1][1:]:
            a = flat(a)
            kids.extend(a[1][1:] if a[0] == "concat" and a[1][0] == axis else [a])
        return ("concat", [axis] + kids)
    return (n[0], [flat(a) for a in n[1]])


def family(src, dst):
    allops, lv = set(), set()
    for n in src + dst:
        ops(n, allops)
        reads(n, lv)
    if any(const_op(n) for n in src + dst):
        return "A operator over constants alone"
    if any(conv_on_weights(n) for n in src + dst):
        return "A2 conv2d over weights and constants alone"
    if len(src) > 1 and any(repr(a) == repr(b) for a, b in zip(src, dst)):
        c = "B two outputs, one the same on both sides"
    elif [repr(flat(n)) for n in src] == [repr(flat(n)) for n in dst]:
        c = "R concat nesting"
    elif "const_imm" in allops:
        c = "I const_imm (diagonal) algebra"
    elif lv and lv <= {"s0"}:
        c = "S scalars (s0) and constants only"
    elif "smul" in allops and "relu" in allops:
        c = "P relu and smul of a nonnegative constant" if allops & set(CONSTS) else "S2 relu of a scalar inside smul"
    elif "concat" in allops:
        c = "CC concat, other"
    else:
        c = "O other"
    return c + (" [weights only]" if lv and all(x.startswith("w") for x in lv) else "")


def main():
    show = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    count, examples = collections.Counter(), collections.defaultdict(list)
    for line in sys.stdin:
        m = re.match(r"^\s*(.*) => (.*?)  \[unknown", line)
        if not m:
            continue
        c = family(parse_list(m.group(1).replace(" ", "")), parse_list(m.group(2).replace(" ", "")))
        count[c] += 1
        examples[c].append(line.strip())
    for c, n in count.most_common():
        print(f"{n:7d}  {c}")
        for e in examples[c][:show]:
            print("           " + e[:240])
    print(f"{sum(count.values()):7d}  unknown in all")


if __name__ == "__main__":
    main()
