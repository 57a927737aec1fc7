#!/usr/bin/python3
"""Drive a FAISS index written by the Go benchmark (vectorstore BenchmarkFaissANN) from Python.

Loads the index file, the queries (.npy, float32, already normalised) and the exact ground
truth (.npy, int64 labels), then, for each parameter value, measures recall@k and
single-query throughput (one index.search call per query, best of --repeat passes), the same
protocol as the Go side. Prints one JSON object per line.

Usage: compare.py --index F --queries Q.npy --gt GT.npy --param efSearch --values 64,128 [--k 10]
"""
import argparse
import json
import time

import faiss
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--param", required=True, help="efSearch or nprobe")
    ap.add_argument("--values", required=True, help="comma-separated values")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    index = faiss.read_index(a.index)
    q = np.load(a.queries).astype(np.float32)
    gt = np.load(a.gt)
    ps = faiss.ParameterSpace()
    for v in [int(x) for x in a.values.split(",")]:
        ps.set_index_parameter(index, a.param, v)
        labels = np.empty((len(q), a.k), dtype=np.int64)
        best = 0.0
        for _ in range(a.repeat):
            t0 = time.perf_counter()
            for i in range(len(q)):
                _, lab = index.search(q[i:i + 1], a.k)
                labels[i] = lab[0]
            best = max(best, len(q) / (time.perf_counter() - t0))
        hit = sum(len(set(labels[i]) & set(gt[i, :a.k])) for i in range(len(q)))
        print(json.dumps({"param": a.param, "value": v, "qps": round(best, 1),
                          "recall": hit / (len(q) * a.k), "omp_threads": faiss.omp_get_max_threads()}),
              flush=True)


if __name__ == "__main__":
    main()
