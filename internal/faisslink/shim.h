// C interface of shim.cpp: small helpers over faiss 1.7.3's C++ API that its C API lacks.
#ifndef MEMORY_FAISSLINK_SHIM_H
#define MEMORY_FAISSLINK_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

// Each function takes a FaissIndex* (a faiss::Index*) and returns 0 on success, 1 when the
// index (after unwrapping an IndexIDMap/IndexIDMap2) is not of the needed type, or -1 when
// faiss threw, with the message copied into err (err_len bytes, NUL terminated).

// memory_faiss_hnsw_set_ef sets hnsw.efConstruction and hnsw.efSearch (a value <= 0 keeps
// the current one).
int memory_faiss_hnsw_set_ef(void* index, int ef_construction, int ef_search, char* err, int err_len);

// memory_faiss_hnsw_get_ef reads them back.
int memory_faiss_hnsw_get_ef(void* index, int* ef_construction, int* ef_search);

// memory_faiss_ivf_hash_direct_map switches an IndexIVF to a hashtable direct map, which makes
// reconstruct(id) work and, unlike the array direct map, still allows remove_ids.
int memory_faiss_ivf_hash_direct_map(void* index, char* err, int err_len);

// memory_faiss_remove_ids_array removes the n ids with an IDSelectorArray (the only selector an
// IVF hashtable direct map accepts) and stores the number removed in *removed.
int memory_faiss_remove_ids_array(void* index, long n, const long* ids, long* removed, char* err, int err_len);

// memory_faiss_search_serial runs index->search(n, x, k, D, I) with OpenMP limited to one
// thread on the calling thread (its ICV is restored afterwards). For a single query faiss has
// nothing to parallelise, but some searches (HNSW in 1.7.3) open a parallel region anyway,
// whose team wake-up costs more than the search on a loaded machine.
int memory_faiss_search_serial(void* index, long n, const float* x, long k, float* D, long* I, char* err, int err_len);

#ifdef __cplusplus
}
#endif

#endif
