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

// Ends a for_each_tile early (a timed piece whose time is up): asked under
// the pool's lock before each tile but the first, with the number of tiles
// taken so far; true: take no more. Tiles are taken in order, so the tiles
// that ran are always [first, returned end).
using TileStop = std::function<bool(uint64_t taken)>;

// for_each_tile as one job of the pool until `stop` says so (an empty
// stop: never); returns the end of the tiles that ran, at least first + 1
// when first < end.
uint64_t for_each_tile(uint64_t first, uint64_t end, const std::function<void(uint64_t)>& body, const TileStop& stop);

// for_each_tile calls so far in this process (each is one job of the
// pool, ending when all its tiles have): tests count them per piece.
uint64_t tile_jobs();

// Runs f with OpenBLAS on tile_workers() threads, then sets it back to one.
// Not for use while tiles run on another thread (OpenBLAS's thread count
// is global).
void with_all_blas_threads(const std::function<void()>& f);

}  // namespace vgpu::gpu::kernels
