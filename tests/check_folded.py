#!/usr/bin/env python3
"""Reads taso-show's listing of a substitutions file on stdin and fails
(naming the line) where a graph holds what taso-generate never forms
(src/enum/enumerate.c): an operator over constants alone, or a conv2d
whose data input computes from weights (w*) and constants alone."""
import re
import sys

CONSTS = ("const_one", "const_iconv", "const_pool", "const_imm")


def parse(s, i):
    j = i
    while j < len(s) and s[j] not in "(),":
        j += 1
    name, args = s[i:j].strip(), []
    if j < len(s) and s[j] == "(":
        j += 1
        while True:
            a, j = parse(s, j)
            args.append(a)
            j += 1
            if s[j - 1] == ")":
                break
    return (name, args), j


def operands(n):  # the tensor arguments, not the parameters (k=3x3, 0, act=relu)
    return [a for a in n[1] if a[1] or not re.match(r"^(\d+|\w+=)", a[0])]


def reads(n, acc):  # the inputs a term reads
    if not n[1] and not re.match(r"^(\d+|\w+=)", n[0]) and n[0] not in CONSTS:
        acc.add(n[0])
    for a in operands(n):
        reads(a, acc)
    return acc


def bad(n):
    ops = operands(n)
    if n[0] not in CONSTS and ops and not reads(n, set()):
        return "an operator over constants alone: "
    if n[0] == "conv2d" and all(x.startswith("w") for x in reads(ops[0], set())):
        return "conv2d over weights and constants alone: "
    return next((b for b in (bad(a) for a in ops) if b), None)


failed, seen = 0, 0
for line in sys.stdin:
    m = re.match(r"^  (.*) => (.*?)  \[", line) or re.match(r"^  (.*) => (.*)$", line)
    if not m:
        continue
    seen += 1
    whys = []
    for side in m.groups():
        text, i = side.replace(" ", ""), 0
        while i < len(text):
            term, i = parse(text, i)
            i += 1
            why = bad(term)
            if why:
                whys.append(why)
    if whys:
        print(whys[0] + line.strip())
        failed += 1
print(f"{seen} substitutions read, {failed} with a folded operator")
sys.exit(1 if failed or not seen else 0)
