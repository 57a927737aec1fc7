#!/usr/bin/python3
"""Drive a FAISS index written by the Go benchmark (vectorstore BenchmarkFaissANN) from Python.

The Go benchmark starts this script once per index and talks to it over stdin/stdout, so that
Go and Python passes over the same queries can alternate (the machine is shared and noisy).
Each stdin line "PARAM VALUE THREADS WHICH" sets the parameter (efSearch or nprobe) with
faiss's ParameterSpace and the OpenMP threads (0 = faiss's default) on one index, then runs
one pass of single-query searches (one index.search call per query, as the Go side does)
and prints one JSON line: qps, recall@k against the ground truth, and the CPU time of the
searching thread and of the process as fractions of the wall time. WHICH is "read" (the
index file the Go side persisted) or "built" (an index this script grew itself by adds of
the vectors in --build-from, trained on the first --train of them, in batches of 10,000,
the way the Go side grows its own).

Usage: compare.py --index F --queries Q.npy --gt GT.npy [--k 10]
                  [--build-from V.npy --factory IVF1024,Flat --train N]   (then commands on stdin)
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
    ap.add_argument("--build-from")
    ap.add_argument("--factory")
    ap.add_argument("--train", type=int, default=0)
    a = ap.parse_args()

    indexes = {"read": faiss.read_index(a.index)}
    built_s = None
    if a.build_from:
        v = np.load(a.build_from, mmap_mode="r")
        t0 = time.perf_counter()
        idx = faiss.index_factory(v.shape[1], a.factory, faiss.METRIC_INNER_PRODUCT)
        if not idx.is_trained:
            idx.train(np.ascontiguousarray(v[: a.train or len(v)]))
        for lo in range(0, len(v), 10000):
            idx.add(np.ascontiguousarray(v[lo:lo + 10000]))
        built_s = round(time.perf_counter() - t0, 1)
        indexes["built"] = idx
        del v
    q = np.load(a.queries).astype(np.float32)
    gt = np.load(a.gt)
    ps = faiss.ParameterSpace()
    default_threads = faiss.omp_get_max_threads()
    print(json.dumps({"ready": True, "ntotal": indexes["read"].ntotal, "faiss": faiss.__version__,
                      "omp_threads": default_threads, "built_s": built_s}), flush=True)
    for line in sys.stdin:
        parts = line.split()
        if len(parts) not in (3, 4):
            continue
        param, v, threads = parts[0], int(parts[1]), int(parts[2])
        index = indexes[parts[3] if len(parts) == 4 else "read"]
        faiss.omp_set_num_threads(threads if threads > 0 else default_threads)
        ps.set_index_parameter(index, param, v)
        labels = np.empty((len(q), a.k), dtype=np.int64)
        t0, c0, p0 = time.perf_counter(), time.thread_time(), time.process_time()
        for i in range(len(q)):
            _, lab = index.search(q[i:i + 1], a.k)
            labels[i] = lab[0]
        wall = time.perf_counter() - t0
        cpu, pcpu = time.thread_time() - c0, time.process_time() - p0
        hit = sum(len(set(labels[i]) & set(gt[i, :a.k])) for i in range(len(q)))
        print(json.dumps({"param": param, "value": v, "threads": faiss.omp_get_max_threads(),
                          "qps": round(len(q) / wall, 1), "thread_cpu": round(cpu / wall, 3),
                          "process_cpu": round(pcpu / wall, 3), "recall": hit / (len(q) * a.k)}),
                     flush=True)


if __name__ == "__main__":
    main()
