#!/usr/bin/python3
"""Drive a FAISS index written by the Go benchmark (vectorstore BenchmarkFaissANN) from Python.

The Go benchmark starts this script once per index and talks to it over stdin/stdout, so that
Go and Python passes over the same queries can alternate (the machine is shared and noisy):
each stdin line "PARAM VALUE THREADS" sets the parameter (efSearch or nprobe) with faiss's
ParameterSpace and the OpenMP threads (0 = faiss's default), runs one pass of single-query searches (one index.search call per query, as
the Go side does) and prints one JSON line: qps, recall@k against the ground truth.

Usage: compare.py --index F --queries Q.npy --gt GT.npy [--k 10]   (then commands on stdin)
"""
import argparse
import json
import sys
import time

import faiss
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--gt", required=True)
    ap.add_argument("--k", type=int, default=10)
    a = ap.parse_args()

    index = faiss.read_index(a.index)
    q = np.load(a.queries).astype(np.float32)
    gt = np.load(a.gt)
    ps = faiss.ParameterSpace()
    default_threads = faiss.omp_get_max_threads()
    print(json.dumps({"ready": True, "ntotal": index.ntotal, "faiss": faiss.__version__,
                      "omp_threads": faiss.omp_get_max_threads()}), flush=True)
    for line in sys.stdin:
        parts = line.split()
        if len(parts) != 3:
            continue
        param, v, threads = parts[0], int(parts[1]), int(parts[2])
        faiss.omp_set_num_threads(threads if threads > 0 else default_threads)
        ps.set_index_parameter(index, param, v)
        labels = np.empty((len(q), a.k), dtype=np.int64)
        t0 = time.perf_counter()
        for i in range(len(q)):
            _, lab = index.search(q[i:i + 1], a.k)
            labels[i] = lab[0]
        qps = len(q) / (time.perf_counter() - t0)
        hit = sum(len(set(labels[i]) & set(gt[i, :a.k])) for i in range(len(q)))
        print(json.dumps({"param": param, "value": v, "threads": faiss.omp_get_max_threads(), "qps": round(qps, 1),
                          "recall": hit / (len(q) * a.k)}), flush=True)


if __name__ == "__main__":
    main()
