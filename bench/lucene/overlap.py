#!/usr/bin/env python3
"""Top-k overlap of two TREC run files (ours against Lucene's, same queries).

    python3 bench/lucene/overlap.py OURS.run LUCENE.run [K]

Prints, over the queries of either file: the mean and least share of the top K ids both
runs hold, how many queries have the same K ids in the same order, and the largest
relative score difference over the documents both top Ks hold (meaningful when both score
with the same formula: WithLuceneBM25 against Lucene's BM25Similarity).
"""
import collections
import sys


def load(path):
    runs = collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 6:
                continue
            runs[p[0]].append((int(p[3]), p[2], float(p[4])))
    return {q: sorted(v) for q, v in runs.items()}


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    k = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    queries = sorted(set(a) | set(b))
    shares, same, worst = [], 0, 0.0
    for q in queries:
        ta = [d for _, d, _ in a.get(q, [])[:k]]
        tb = [d for _, d, _ in b.get(q, [])[:k]]
        n = max(len(ta), len(tb))
        shares.append(len(set(ta) & set(tb)) / n if n else 1.0)
        same += ta == tb
        sa = {d: s for _, d, s in a.get(q, [])}
        for _, d, s in b.get(q, [])[:k]:
            if d in sa and s:
                worst = max(worst, abs(sa[d] - s) / abs(s))
    print(f"queries {len(queries)} top-{k} overlap mean {sum(shares) / len(shares):.4f} "
          f"min {min(shares):.2f} identical-order {same} max rel score diff {worst:.2e}")


if __name__ == "__main__":
    main()
