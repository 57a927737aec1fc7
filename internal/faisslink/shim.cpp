//go:build faiss

#include "shim.h"

#include <cstdint>
#include <cstring>
#include <exception>

#include <omp.h>

#include <faiss/Index.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIDMap.h>
#include <faiss/IndexIVF.h>
#include <faiss/impl/IDSelector.h>
#include <faiss/invlists/DirectMap.h>

namespace {

faiss::Index* unwrap(void* p) {
    faiss::Index* idx = static_cast<faiss::Index*>(p);
    if (auto* m = dynamic_cast<faiss::IndexIDMap*>(idx)) {
        return m->index;
    }
    return idx;
}

void copy_err(const char* msg, char* err, int err_len) {
    if (err == nullptr || err_len <= 0) {
        return;
    }
    std::strncpy(err, msg, err_len - 1);
    err[err_len - 1] = '\0';
}

}  // namespace

extern "C" int memory_faiss_hnsw_set_ef(void* index, int ef_construction, int ef_search, char* err, int err_len) {
    try {
        auto* h = dynamic_cast<faiss::IndexHNSW*>(unwrap(index));
        if (h == nullptr) {
            return 1;
        }
        if (ef_construction > 0) {
            h->hnsw.efConstruction = ef_construction;
        }
        if (ef_search > 0) {
            h->hnsw.efSearch = ef_search;
        }
        return 0;
    } catch (const std::exception& e) {
        copy_err(e.what(), err, err_len);
        return -1;
    }
}

extern "C" int memory_faiss_hnsw_get_ef(void* index, int* ef_construction, int* ef_search) {
    auto* h = dynamic_cast<faiss::IndexHNSW*>(unwrap(index));
    if (h == nullptr) {
        return 1;
    }
    *ef_construction = h->hnsw.efConstruction;
    *ef_search = h->hnsw.efSearch;
    return 0;
}

extern "C" int memory_faiss_ivf_hash_direct_map(void* index, char* err, int err_len) {
    try {
        auto* ivf = dynamic_cast<faiss::IndexIVF*>(unwrap(index));
        if (ivf == nullptr) {
            return 1;
        }
        if (ivf->direct_map.type != faiss::DirectMap::Hashtable) {
            ivf->set_direct_map_type(faiss::DirectMap::Hashtable);
        }
        return 0;
    } catch (const std::exception& e) {
        copy_err(e.what(), err, err_len);
        return -1;
    }
}

extern "C" int memory_faiss_remove_ids_array(void* index, long n, const long* ids, long* removed, char* err, int err_len) {
    try {
        static_assert(sizeof(long) == sizeof(int64_t), "idx_t is not long");
        faiss::IDSelectorArray sel(static_cast<size_t>(n), reinterpret_cast<const int64_t*>(ids));
        *removed = static_cast<long>(static_cast<faiss::Index*>(index)->remove_ids(sel));
        return 0;
    } catch (const std::exception& e) {
        copy_err(e.what(), err, err_len);
        return -1;
    }
}

extern "C" int memory_faiss_search_serial(void* index, long n, const float* x, long k, float* D, long* I, char* err, int err_len) {
    const int prev = omp_get_max_threads();
    omp_set_num_threads(1);
    int rc = 0;
    try {
        static_cast<faiss::Index*>(index)->search(
                n, x, k, D, reinterpret_cast<int64_t*>(I));
    } catch (const std::exception& e) {
        copy_err(e.what(), err, err_len);
        rc = -1;
    }
    omp_set_num_threads(prev);
    return rc;
}
