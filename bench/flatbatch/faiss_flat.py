#!/usr/bin/python3
"""Python FAISS side of vectorstore's BenchmarkFlatSearchBatch.

Reads the vectors and queries the Go benchmark wrote (raw little-endian float32, already
L2-normalised, so inner product = cosine), builds faiss.IndexFlatIP once, then answers
commands on stdin, one per line:

    search K OUT   run index.search(queries, K), write the ids (int64, raw) to OUT and
                   print the seconds the search took
    quit

Usage: faiss_flat.py XB XQ DIM THREADS  (Debian's python3-faiss and python3-numpy)
"""
import sys
import time

import faiss
import numpy as np


def main():
    xb_path, xq_path, dim, threads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    faiss.omp_set_num_threads(threads)
    xb = np.fromfile(xb_path, dtype="<f4").reshape(-1, dim)
    xq = np.fromfile(xq_path, dtype="<f4").reshape(-1, dim)
    index = faiss.IndexFlatIP(dim)
    index.add(xb)
    del xb
    print(f"ready n={index.ntotal} nq={xq.shape[0]} faiss={faiss.__version__} threads={faiss.omp_get_max_threads()}", flush=True)
    for line in sys.stdin:
        parts = line.split()
        if not parts or parts[0] == "quit":
            break
        if parts[0] == "search":
            k, out = int(parts[1]), parts[2]
            t0 = time.perf_counter()
            _, ids = index.search(xq, k)
            sec = time.perf_counter() - t0
            ids.astype("<i8").tofile(out)
            print(f"{sec:.6f}", flush=True)


if __name__ == "__main__":
    main()
