#!/usr/bin/env bash
# Builds faiss with GPU support and its C API for the faissgpu build tag, on a machine with an
# NVIDIA GPU and the CUDA toolkit (nvcc, cuBLAS), idempotently, into .deps/faiss-gpu/:
#   lib/libfaiss_c.so, lib/libfaiss.so (the AVX2 build of faiss, GPU code included),
#   include/faiss/... (C++ and C API headers), and env.sh with the CGO flags to build with.
#
# faiss source: FAISS_SRC, a folder or a .tar.* of faiss's source tree. Tested with faiss's
# main branch at 02dbb4e42f49aa2ce57cd78977b0e47a11f7cb91 (version 1.15.0, built by its own
# CI with CUDA 13.2) and CUDA 13.0. Debian's faiss 1.7.3 source does not build with CUDA 13
# (C++11 headers against CCCL 3, which needs C++17). Default FAISS_SRC: .gpu/faiss-src.tar.xz.
#
# BLAS: the system's OpenBLAS when ldconfig knows one, else Debian's libopenblas0-openmp,
# libgfortran5 and libquadmath0 .deb files from BLAS_DEBS (default .gpu/debs), unpacked into .deps/faiss-gpu.
#
# Knobs: CUDA_ARCH (default: the first GPU's, from nvidia-smi, e.g. 90), JOBS (default: all
# cores), FAISS_GPU_CODECS=float leaves out the GPU IVF scalar-quantizer scan kernels (112 of
# the 128 generated IVF scan files; GPU IVF-SQ then throws, Flat and IVFFlat are whole): the
# build then fits a short GPU lease. Default: all.
#
# Usage: scripts/deps-gpu.sh        then: source .deps/faiss-gpu/env.sh; go test -tags faiss,faissgpu ./vectorstore/
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUTDIR=${MEMORY_DEPS:-$ROOT/.deps}/faiss-gpu
SRC=${FAISS_SRC:-$ROOT/.gpu/faiss-src.tar.xz}
DEBS=${BLAS_DEBS:-$ROOT/.gpu/debs}
JOBS=${JOBS:-$(nproc)}
CODECS=${FAISS_GPU_CODECS:-all}
log() { printf 'deps-gpu: %s\n' "$*" >&2; }
stamp="$OUTDIR/.built-$CODECS"
if [ -f "$stamp" ] && [ -f "$OUTDIR/lib/libfaiss_c.so" ]; then log "already built: $OUTDIR"; exit 0; fi
mkdir -p "$OUTDIR/lib" "$OUTDIR/include" "$OUTDIR/build"

# --- CUDA toolkit ---------------------------------------------------------------------------
NVCC=${NVCC:-$(command -v nvcc || true)}
for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do [ -z "$NVCC" ] && [ -x "$c" ] && NVCC=$c; done
[ -n "$NVCC" ] || { log "no nvcc found (set NVCC)"; exit 1; }
CUDA_ROOT=$(cd "$(dirname "$(readlink -f "$NVCC")")/.." && pwd)
log "nvcc: $NVCC ($("$NVCC" --version | tail -1)); toolkit root $CUDA_ROOT"
cmake_cuda=(-DCMAKE_CUDA_COMPILER="$NVCC" -DCUDAToolkit_ROOT="$CUDA_ROOT")
cublas=$(find "$CUDA_ROOT" -maxdepth 4 -name 'libcublas.so' 2>/dev/null | head -1)
if [ -z "$cublas" ]; then
  # cuBLAS from NVIDIA's Python wheels (nvidia-cublas): point CMake at it.
  cublas=$(python3 -c 'import nvidia, os, glob; r=[p for d in nvidia.__path__ for p in glob.glob(os.path.join(d, "**", "libcublas.so*"), recursive=True)]; print(sorted(r)[0] if r else "")' 2>/dev/null || true)
  [ -n "$cublas" ] || { log "no libcublas found under $CUDA_ROOT or in python's nvidia wheels"; exit 1; }
  cublaslt=$(ls "$(dirname "$cublas")"/libcublasLt.so* | head -1)
  cmake_cuda+=(-DCUDA_cublas_LIBRARY="$cublas" -DCUDA_cublasLt_LIBRARY="$cublaslt")
  if [ -z "$(find "$CUDA_ROOT" -maxdepth 4 -name 'libcudart.so' 2>/dev/null | head -1)" ]; then
    cudart=$(find "$CUDA_ROOT" "$(dirname "$cublas")/../.." -maxdepth 4 -name 'libcudart.so*' 2>/dev/null | sort | head -1)
    [ -n "$cudart" ] && cmake_cuda+=(-DCUDA_cudart_LIBRARY="$cudart")
  fi
  export CPATH="$(dirname "$cublas")/../include${CPATH:+:$CPATH}"
fi
log "cuBLAS: $cublas"
ARCH=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d '. ')}
[ -n "$ARCH" ] || { log "cannot tell the GPU architecture (set CUDA_ARCH, e.g. 90)"; exit 1; }
log "CUDA architecture: sm_$ARCH"

# --- BLAS -----------------------------------------------------------------------------------
blas=$(ldconfig -p | awk '/libopenblas\.so(\.0)? /{print $NF; exit}')
if [ -z "$blas" ]; then
  ls "$DEBS"/libopenblas0-openmp_*.deb >/dev/null 2>&1 || { log "no OpenBLAS on the system and no .deb in $DEBS"; exit 1; }
  for d in "$DEBS"/*.deb; do dpkg-deb -x "$d" "$OUTDIR/blas"; done
  find "$OUTDIR/blas" -name 'lib*.so*' -exec cp -a {} "$OUTDIR/lib/" \;
  blas=$OUTDIR/lib/libopenblas.so.0
fi
ln -sf "$blas" "$OUTDIR/lib/libopenblas.so"
log "BLAS: $blas"

# --- faiss source -----------------------------------------------------------------------------
src=$OUTDIR/src
if [ ! -f "$src/CMakeLists.txt" ]; then
  rm -rf "$src"; mkdir -p "$src"
  if [ -d "$SRC" ]; then cp -a "$SRC"/. "$src/"; else tar -xf "$SRC" -C "$src" --strip-components="${FAISS_SRC_STRIP:-0}"; fi
  [ -f "$src/CMakeLists.txt" ] || { log "no CMakeLists.txt in $SRC"; exit 1; }
  # faiss's c_api/gpu/CMakeLists.txt adds the GPU C API (faiss_get_num_gpus, the cloners...)
  # to faiss_c only; the AVX2 build links faiss_c_avx2, so add it there too.
  sed -n '/^target_sources(faiss_c PRIVATE/,/)/p' "$src/c_api/gpu/CMakeLists.txt" |
    sed 's/^target_sources(faiss_c PRIVATE/target_sources(faiss_c_avx2 PRIVATE/' >>"$src/c_api/gpu/CMakeLists.txt"
  if [ "$CODECS" = float ]; then
    python3 - "$src" <<'PY'
import sys, pathlib
root = pathlib.Path(sys.argv[1])
cm = root / "faiss/gpu/CMakeLists.txt"
s = cm.read_text()
start = s.index("set(SUB_CODEC_TYPE")
end = s.index(")", s.index('"faiss::gpu::CodecFloat"')) + 1
s = s[:start] + 'set(SUB_CODEC_TYPE\n    "faiss::gpu::CodecFloat"\n  )' + s[end:]
cm.write_text(s)
impl = root / "faiss/gpu/impl/scan/IVFInterleavedImpl.cuh"
s = impl.read_text()
a = s.index("    } else {\n        switch (scalarQ->qtype) {")
b = s.index("            default:\n                FAISS_ASSERT(false);\n        }\n    }\n", a)
b += len("            default:\n                FAISS_ASSERT(false);\n        }\n    }\n")
s = s[:a] + '    } else {\n        FAISS_THROW_MSG("this faiss build has no GPU IVF scalar-quantizer kernels (FAISS_GPU_CODECS=float)");\n    }\n' + s[b:]
impl.write_text(s)
PY
    log "GPU IVF scalar-quantizer kernels left out (FAISS_GPU_CODECS=float)"
  fi
fi

# --- configure and build ----------------------------------------------------------------------
b=$OUTDIR/build
if [ ! -f "$b/build.ninja" ]; then
  cmake -S "$src" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DFAISS_ENABLE_GPU=ON -DFAISS_ENABLE_C_API=ON -DFAISS_ENABLE_PYTHON=OFF -DBUILD_TESTING=OFF \
    -DFAISS_ENABLE_EXTRAS=OFF -DFAISS_ENABLE_MKL=OFF -DFAISS_OPT_LEVEL=avx2 -DBUILD_SHARED_LIBS=ON \
    -DBLAS_LIBRARIES="$blas" -DLAPACK_LIBRARIES="$blas" \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" "${cmake_cuda[@]}" >&2
fi
log "building faiss_c_avx2 with $JOBS jobs"
ninja -C "$b" -j "$JOBS" faiss_c_avx2 >&2

# --- install ----------------------------------------------------------------------------------
cfa=$(find "$b" -name 'libfaiss_c_avx2.so' | head -1)
fa=$(find "$b" -name 'libfaiss_avx2.so' | head -1)
nm -D --defined-only "$cfa" | grep ' faiss_index_cpu_to_gpu$' >/dev/null || { log "$cfa lacks the GPU C API"; exit 1; }
cp -a "$cfa" "$fa" "$OUTDIR/lib/"
ln -sf libfaiss_c_avx2.so "$OUTDIR/lib/libfaiss_c.so"
ln -sf libfaiss_avx2.so "$OUTDIR/lib/libfaiss.so"
rm -rf "$OUTDIR/include/faiss"
cp -a "$src/faiss" "$OUTDIR/include/faiss"
cp -a "$src/c_api" "$OUTDIR/include/faiss/c_api"
cat > "$OUTDIR/env.sh" <<EOF
# Source this, then build with -tags faiss,faissgpu.
export CGO_CFLAGS="-I$OUTDIR/include"
export CGO_CXXFLAGS="-I$OUTDIR/include -std=c++20"
export CGO_LDFLAGS="-L$OUTDIR/lib -lfaiss -Wl,-rpath,$OUTDIR/lib"
export LD_LIBRARY_PATH="$OUTDIR/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
EOF
touch "$stamp"
log "ready: $OUTDIR (source $OUTDIR/env.sh)"
