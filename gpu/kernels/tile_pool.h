// SPDX-License-Identifier: GPL-2.0-or-later
// The host threads that compute sgemm's and conv2d's tiles (kernels.h).
// Each tile is one single-threaded BLAS call, and the pool runs as many
// tiles at once as OpenBLAS had threads when the pool started
// (OPENBLAS_NUM_THREADS, else the host's cores). A tile's bits then depend
// only on its shape, never on which thread computes it or on how a launch
// is cut. (One multi-threaded BLAS call per tile spread a small product
// over every thread: docs/scheduler.md, "Tiles and slicing on a quiet
// machine".)
//
// Starting the pool sets OpenBLAS to one thread for the whole process: a
// caller that wants OpenBLAS's own threads for one call of its own (a
// benchmark's reference) uses with_all_blas_threads.
#pragma once

#include <cstdint>
#include <functional>

namespace vgpu::gpu::kernels {

// How many tiles run at once: the pool's threads and the calling one.
unsigned tile_workers();

// Calls body(i) once for each i in [first, end) on the pool's threads and
// the calling thread, and returns when all have returned; the first
// exception a call throws is rethrown here once the others are done (the
// tiles not yet started then do not run). Callers on several threads
// share the pool; each caller runs only its own tiles.
void for_each_tile(uint64_t first, uint64_t end, const std::function<void(uint64_t)>& body);

// Runs f with OpenBLAS on tile_workers() threads, then sets it back to one.
// Not for use while tiles run on another thread (OpenBLAS's thread count
// is global).
void with_all_blas_threads(const std::function<void()>& f);

}  // namespace vgpu::gpu::kernels
