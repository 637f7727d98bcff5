// Small conveniences over the simulator for lesson code: every number a lesson
// prints comes from these calls (the simulator or the reference), never from prose.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.hpp"
#include "attention_backward.hpp"
#include "exec/functional_executor.hpp"
#include "model/simulation.hpp"

namespace fasim::lessons {

AttentionProblem make_problem(std::int64_t batch, std::int64_t heads, std::int64_t N, std::int64_t d,
                              DType dtype = DType::fp16, bool causal = false);

AlgorithmResult sim(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& tiles = {});
TileRequest tiles(std::int64_t Br, std::int64_t Bc);

// The kernel with this name (throws std::logic_error if the program has none).
const KernelRecord& kernel(const AlgorithmResult& r, const std::string& name);
const KernelTiming& timing(const AlgorithmResult& r, const std::string& name);
// The algorithm's main kernel: the last one launched (fa1's init kernel comes first).
const KernelRecord& main_kernel(const AlgorithmResult& r);
const KernelTiming& main_timing(const AlgorithmResult& r);

// Bytes of one tensor at one level, read and written (read_of, write_of: exec/kernel_record.hpp).
Count both_of(const LevelTraffic& t, std::string_view n);
// The tensors of one or more traffic counts, each once, in the order they first appear.
std::vector<std::string> tensor_names(std::initializer_list<const LevelTraffic*> levels);

// Bytes of every global tensor the algorithm declares (all heads), without running
// it: the same footprint simulate() reports, but instant even for huge N.
Count footprint_bytes(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& req = {});

// "memory" or "compute": what kind of limit a runtime-model bound names.
std::string bound_kind(const std::string& bound);

// The GPU with its shared memory (per block and per SM) scaled by factor.
GpuSpec with_shared_memory(const GpuSpec& gpu, double factor);

// Runs an algorithm functionally on seeded random inputs and prints every step
// (sim/exec/trace_printer), fitted to 80 columns. Returns the run; `trace` gets the text.
// `keep` names intermediate tensors (FlashDecoding's O_partial, say) to copy out as the program stores
// them: kept[name][head] in the tensor's declared layout.
struct TracedRun {
    std::string trace;
    FunctionalRun run;
    std::vector<reference::Matrix> Q, K, V;
    std::map<std::string, std::vector<reference::Matrix>> kept;
};
TracedRun traced_run(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileConfig& cfg,
                     std::uint64_t seed, const std::vector<std::string>& keep = {});

// The forward (not printed), then the backward of an algorithm on seeded random Q, K, V and dO,
// printing the backward's every step; each head's gradients checked against the float64 backward.
struct TracedBackward {
    std::string trace;
    BackwardRun run;
    std::vector<reference::GradientChecks> checks;  // per head
    bool pass() const;
};
TracedBackward traced_backward(const Algorithm& forward, const AttentionProblem& p, const GpuSpec& gpu,
                               const TileConfig& forward_tiles, const TileConfig& backward_tiles, std::uint64_t seed);

}  // namespace fasim::lessons

namespace fasim::lessons {
// sim(), remembered for the life of the process (lessons ask for the same run in
// several steps, and --json runs every step).
const AlgorithmResult& sim_cached(const Algorithm& algo, const AttentionProblem& p, const GpuSpec& gpu, const TileRequest& tiles = {});
// The same for the passes of training (simulate(forward, pass, ...)).
const AlgorithmResult& sim_cached(const Algorithm& forward, PassSelection pass, const AttentionProblem& p, const GpuSpec& gpu,
                                  const TileRequest& tiles = {});
}  // namespace fasim::lessons
