// The host emulator's launcher: every kernel of kernels/msm/, kernels/ntt/ and kernels/pce/
// compiled for the CPU (see host_cuda.h) behind one C entry point with the driver's calling convention, an array
// of pointers to the argument values (as cuLaunchKernel takes them). Built by crates/gpu's build
// script (feature `emu`); crates/gpu/src/emu/ launches from it.
#include <barrier>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "msm/msm.cu"
#include "msm/msm_test.cu"
#include "msm/split.cu"
#include "ntt/ntt.cu"
#include "pce/products.cu"

thread_local dim3 threadIdx;
thread_local dim3 blockIdx;
dim3 blockDim;
dim3 gridDim;

static std::barrier<>* emu_barrier = nullptr;
unsigned char* cuzk_emu_dynamic_shared = nullptr;

void __syncthreads() {
    if (emu_barrier) emu_barrier->arrive_and_wait();
}

template <class... A, size_t... I>
static void emu_invoke_impl(void (*kernel)(A...), void** params, std::index_sequence<I...>) {
    kernel(*static_cast<A*>(params[I])...);
}

template <class... A>
static void emu_invoke(void (*kernel)(A...), void** params) {
    emu_invoke_impl(kernel, params, std::index_sequence_for<A...>{});
}

struct EmuKernel {
    const char* name;
    void (*run)(void**);
    bool synchronises;
};

#define EMU_KERNEL(name, sync) {#name, [](void** p) { emu_invoke(name, p); }, sync}
#define EMU_GROUP(G)                                                                            \
    EMU_KERNEL(msm_accumulate_##G, false), EMU_KERNEL(msm_merge_##G, false),                    \
        EMU_KERNEL(msm_reduce_##G, false), EMU_KERNEL(msm_batch_bitmap_##G, false),              \
        EMU_KERNEL(msm_batch_indices_##G, false), EMU_KERNEL(msm_batch_range_##G, false),        \
        EMU_KERNEL(msm_sum_##G, false), EMU_KERNEL(msm_test_##G, false),                       \
        EMU_KERNEL(msm_affine_pairs_##G, false), EMU_KERNEL(msm_affine_sums_##G, false),         \
        EMU_KERNEL(msm_inv_up_##G, false), EMU_KERNEL(msm_inv_down_##G, false),                  \
        EMU_KERNEL(msm_inv_top_##G, true), EMU_KERNEL(msm_affine_buckets_##G, false),            \
        EMU_KERNEL(msm_affine_reduce_##G, false)

static const EmuKernel emu_kernels[] = {
    EMU_KERNEL(msm_digits, false),
    EMU_KERNEL(msm_digits_bins, true),
    EMU_KERNEL(msm_scan_tiles, true),
    EMU_KERNEL(msm_scan_add, false),
    EMU_KERNEL(msm_scatter, false),
    EMU_KERNEL(msm_sort_bins, true),
    EMU_KERNEL(msm_sort_bin_buckets, true),
    EMU_KERNEL(msm_sort_big, true),
    EMU_KERNEL(msm_affine_stats, false),
    EMU_KERNEL(msm_affine_slots, false),
    EMU_KERNEL(msm_split_count, false),
    EMU_KERNEL(msm_split_totals, false),
    EMU_KERNEL(msm_split_scatter, false),
    EMU_KERNEL(msm_gather_g1, false),
    EMU_KERNEL(msm_gather_g2, false),
    EMU_GROUP(g1),
    EMU_GROUP(g2),
    EMU_KERNEL(msm_test_fp, false),
    EMU_KERNEL(msm_test_fp2, false),
    EMU_KERNEL(msm_bench_fp_mul, false),
    EMU_KERNEL(msm_bench_madd_g1, false),
    EMU_KERNEL(msm_bench_madd_g2, false),
    EMU_KERNEL(ntt_pass_dif_r1, true),
    EMU_KERNEL(ntt_pass_dif_r2, true),
    EMU_KERNEL(ntt_pass_dif_r3, true),
    EMU_KERNEL(ntt_pass_dit_r1, true),
    EMU_KERNEL(ntt_pass_dit_r2, true),
    EMU_KERNEL(ntt_pass_dit_r3, true),
    EMU_KERNEL(ntt_pass_dif_r1_o2, true),
    EMU_KERNEL(ntt_pass_dit_r1_o2, true),
    EMU_KERNEL(ntt_pass_dif_r2_o3, true),
    EMU_KERNEL(ntt_pass_dit_r2_o3, true),
    EMU_KERNEL(ntt_twiddle_table, false),
    EMU_KERNEL(ntt_bitrev_small, false),
    EMU_KERNEL(ntt_bitrev_tiled, true),
    EMU_KERNEL(ntt_h_pointwise, false),
    EMU_KERNEL(pce_products, false),
};

// Launches run one at a time (the launch shape and the barrier are process-wide, as a device's
// are per launch).
static std::mutex emu_launch_lock;

static const EmuKernel* emu_find(const char* name) {
    for (const EmuKernel& k : emu_kernels) {
        if (std::strcmp(k.name, name) == 0) return &k;
    }
    return nullptr;
}

// Whether the emulator has a kernel named `name`: 1 or 0.
extern "C" int cuzk_emu_has(const char* name) { return emu_find(name) ? 1 : 0; }

// Runs kernel `name` on a grid of grid_x·grid_y·grid_z blocks (x fastest) of `block` threads with
// `shared_bytes` of dynamic shared memory. Returns 0, or -1 when no kernel has that name.
extern "C" int cuzk_emu_launch(const char* name, uint32_t grid_x, uint32_t grid_y, uint32_t grid_z,
                               uint32_t block, uint32_t shared_bytes, void** params) {
    std::lock_guard<std::mutex> guard(emu_launch_lock);
    const EmuKernel* kernel = emu_find(name);
    if (!kernel) return -1;
    gridDim = dim3{grid_x, grid_y, grid_z};
    blockDim = dim3{block, 1, 1};
    const uint64_t blocks = (uint64_t)grid_x * grid_y * grid_z;
    auto block_index = [grid_x, grid_y](uint64_t b) {
        return dim3{(unsigned)(b % grid_x), (unsigned)(b / grid_x % grid_y), (unsigned)(b / grid_x / grid_y)};
    };
    // 16-byte aligned, as the device's; poisoned before each block, so what a block did not write
    // reads as garbage.
    struct alignas(16) Word {
        unsigned char bytes[16];
    };
    std::vector<Word> shared((shared_bytes + 15) / 16);
    cuzk_emu_dynamic_shared = shared.empty() ? nullptr : shared.front().bytes;
    auto poison = [&shared]() noexcept {
        if (!shared.empty()) std::memset(shared.data(), 0xa5, shared.size() * sizeof(Word));
    };
    if (!kernel->synchronises) {
        for (uint64_t b = 0; b < blocks; b++) {
            poison();
            blockIdx = block_index(b);
            for (uint32_t t = 0; t < block; t++) {
                threadIdx = dim3{t, 0, 0};
                kernel->run(params);
            }
        }
        cuzk_emu_dynamic_shared = nullptr;
        return 0;
    }
    // One host thread per thread of a block, made once per launch: each runs its thread of every
    // block in turn, and all of them finish a block before any starts the next (`between`, whose
    // completion poisons the shared memory once they all have), as one block at a time on the
    // device. `__syncthreads` is the other barrier.
    poison();
    std::barrier<> barrier(block);
    std::barrier between(block, poison);
    emu_barrier = &barrier;
    std::vector<std::thread> threads;
    threads.reserve(block);
    for (uint32_t t = 0; t < block; t++) {
        threads.emplace_back([kernel, params, blocks, block_index, t, &between] {
            threadIdx = dim3{t, 0, 0};
            for (uint64_t b = 0; b < blocks; b++) {
                blockIdx = block_index(b);
                kernel->run(params);
                between.arrive_and_wait();
            }
        });
    }
    for (std::thread& thread : threads) thread.join();
    emu_barrier = nullptr;
    cuzk_emu_dynamic_shared = nullptr;
    return 0;
}
