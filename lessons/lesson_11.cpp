// Lesson 11: inference. A decode step is one query row per sequence against a long K/V cache: FA2's
// grid leaves most SMs idle, FlashDecoding splits the keys over blocks and combines the partial results
// by their log-sum-exp, the partials' round trip is what that costs, and grouped K/V heads shrink what
// every step reads.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <set>

#include "common/errors.hpp"
#include "common/lesson.hpp"
#include "common/sim_helpers.hpp"
#include "common/text.hpp"
#include "kernels/tile_rules.hpp"
#include "model/sweep.hpp"
#include "precision.hpp"
#include "report/units.hpp"

using namespace fasim;
using namespace fasim::lessons;

namespace {

constexpr std::int64_t kTraceHeads = 4, kTraceKvHeads = 2, kTraceD = 4, kTraceBc = 4;
constexpr double kNearFloor = 0.8;  // step 6: "reaches the HBM floor" = at least 80% of its speed

std::string b(Count v) { return units::bytes(to_double(v)); }
std::string plural(std::int64_t n, const std::string& noun) { return std::to_string(n) + " " + noun + (n == 1 ? "" : "s"); }
double ratio(Count a, Count c) { return to_double(a) / to_double(c); }

const Algorithm& fa2() { return algorithm("fa2"); }
const Algorithm& flash_decoding() { return algorithm("flash_decoding"); }

TileRequest splits(std::int64_t s) {
    TileRequest t;
    t.kv_splits = s;  // 0: flash-attention's heuristic
    return t;
}

AttentionProblem decode_step(const AttentionProblem& shape, std::int64_t Nk, std::int64_t kv_heads) {
    AttentionProblem p = shape;
    p.N = 1;
    p.Nk = Nk;
    p.kv_heads = kv_heads;
    p.causal = false;  // one new row sees its whole cache
    return p;
}

// The exercises' problem: a Llama-style decode step.
AttentionProblem exercise_problem() { return decode_step(make_problem(1, 32, 1, 128), 65536, 8); }

Count kv_read(const AlgorithmResult& r) { return read_of(r.hbm, "K") + read_of(r.hbm, "V"); }
Count partial_bytes(const AlgorithmResult& r) { return both_of(r.hbm, "O_partial") + both_of(r.hbm, "LSE_partial"); }

// Bytes of K and V in memory (the K/V cache of this attention layer), from the tensors the program declares.
std::int64_t kv_cache_bytes(const AlgorithmResult& r) {
    std::int64_t bytes = 0;
    for (const GlobalTensor& t : declared_tensors(*r.algo, r.problem, r.tiles))
        if (t.name == "K" || t.name == "V") bytes += t.bytes_per_head() * t.heads;
    return bytes;
}

// The least time a decode step can take: K and V read once at the HBM bandwidth the model uses.
double kv_floor_s(const AlgorithmResult& r, const GpuSpec& gpu) {
    return static_cast<double>(kv_cache_bytes(r)) / gpu.effective_hbm_bandwidth();
}

const KernelTiming& split_kernel(const AlgorithmResult& r) { return timing(r, "flash_decoding_split"); }
double combine_s(const AlgorithmResult& r) {
    for (const KernelTiming& t : r.timing)
        if (t.name == "flash_decoding_combine") return t.total_s;
    return 0;  // one split: no combine kernel
}

// "instruction issue (mma.sync, latency-bound), ..." -> "instruction issue": the term, for a table cell.
std::string bound_term(const std::string& bound) {
    std::string s = bound.substr(0, bound.find_first_of("(,"));
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s;
}

}  // namespace

int FASIM_LESSON_ENTRY(int argc, char** argv) {
    Lesson L(11, "inference_decoding", "Inference: decoding with split keys",
             "Generating text adds one token at a time: each step attends with a single query row per head to "
             "every token so far, kept in HBM as the K/V cache. With one query row FlashAttention-2's grid is "
             "tiny and most SMs sit idle. FlashDecoding splits the keys across blocks and combines the partial "
             "results exactly through their log-sum-exp. This lesson measures the idle SMs, picks the splits "
             "as flash-attention does, traces the combine on real numbers, prices it, and shows what sharing "
             "K/V heads between query heads (GQA, MQA) saves.");
    L.default_gpu("H100-SXM");
    L.problem_options(make_problem(1, 32, 1, 128), kD | kHeads | kBatch | kDtype);
    std::int64_t& nk =
        L.int_option("--Nk", 65536, 1, ProblemLimits::max_seq, "cached keys per sequence (the K/V cache's length)");
    std::int64_t& kv_heads = L.int_option("--kv-heads", 8, 1, ProblemLimits::max_heads,
                                          "K/V heads, a divisor of --heads (grouped-query attention; 1: multi-query)");
    std::int64_t& kv_splits = L.int_option("--kv-splits", 0, 0, ProblemLimits::max_seq,
                                           "FlashDecoding's splits of the keys (0: flash-attention's heuristic)");
    std::int64_t& trace_nk = L.int_option("--trace-Nk", 8, 2, 64, "cached keys of the traced problem");
    std::int64_t& trace_splits = L.int_option("--trace-splits", 2, 2, 16, "splits of the traced problem");
    std::int64_t& seed = L.int_option("--seed", 1, 0, 1000000, "seed of the traced problem's random Q, K, V");

    // The decode step and the splits asked for: they outlive the builder, since the steps run after it.
    AttentionProblem p;
    TileRequest chosen;
    return L.run(argc, argv, [&](Lesson&) {
        const GpuSpec& gpu = L.gpu();
        p = decode_step(L.problem(), nk, kv_heads);
        validate(p);  // --kv-heads must divide --heads
        chosen = splits(kv_splits);
        choose_tiles(flash_decoding(), p, gpu, chosen);  // refuses --kv-splits beyond the K/V tiles, with the range
        const std::int64_t trace_tiles = ceil_div(trace_nk, kTraceBc);
        if (trace_splits > trace_tiles)
            throw usage_error("--trace-splits " + std::to_string(trace_splits) + " is out of range for --trace-Nk " +
                                  std::to_string(trace_nk),
                              "a split needs at least one K/V tile of " + std::to_string(kTraceBc) + " keys: 2.." +
                                  std::to_string(std::max<std::int64_t>(2, trace_tiles)),
                              "pass a smaller --trace-splits or a larger --trace-Nk");

        L.step({"decode", "The decode problem: one query row, a long K/V cache",
                R"(A language model generates text one token at a time. At each step the new
token's query is a single row per head; its keys and values are every token
so far, kept in HBM as the K/V cache. Each query head computes one row of
attention against the whole cache:

    o = softmax(scale·q·Kᵀ)·V        q: 1×d    K, V: Nk×d

Every key and value is used by only the few query heads that read it, so
there is almost nothing to reuse: a decode step is memory-bound by nature,
and the best it can do is read K and V once at the HBM bandwidth.

FlashAttention-2 gives each Q tile of each (batch, head) a block: B·H·⌈N/Br⌉
blocks. In training N is thousands; here N = 1, so the grid is B·H blocks,
fewer than the GPU has SMs, and each block streams the whole cache alone.
Inside a block it is worse still: FA2's warps each own a band of 16 or 32
rows of the Q tile, and the tensor cores compute whole 16-row fragments, so
the block's one row keeps one warp busy with its whole band, every row but
one of it empty, while the other warps only help copy K and V.)",
                [&](Ctx& c) {
                    const AlgorithmResult& f = sim_cached(fa2(), p, gpu);
                    const AlgorithmResult& fd = sim_cached(flash_decoding(), p, gpu, chosen);
                    const KernelTiming& k = main_timing(f);
                    const KernelRecord& kr = main_kernel(f);
                    const double floor_s = kv_floor_s(fd, gpu);
                    const double ridge = gpu.matmul_flops(p.dtype) / gpu.effective_hbm_bandwidth();
                    const double intensity = static_cast<double>(f.matmul_flops) / static_cast<double>(kv_cache_bytes(fd));
                    c.out << p.describe() << " on " << gpu.name << " (" << gpu.sm_count << " SMs)\n\n";
                    Table t({"FlashAttention-2", ""}, "lr");
                    t.row({"grid = B·H·⌈N/Br⌉", grouped(k.grid) + " blocks"});
                    t.row({"waves", fixed(k.waves, 2)});
                    t.row({"idle SMs", std::to_string(k.idle_sms) + " of " + std::to_string(gpu.sm_count)});
                    t.row({"SM time busy", percent(k.sm_busy_fraction, 0)});
                    t.row({"warps computing per block", std::to_string(kr.active_warps) + " of " + std::to_string(kr.desc.warps)});
                    t.row({"predicted time", units::seconds(f.time_s)});
                    t.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "Bound by: " + k.bound + ".");
                    c.out << '\n';
                    print_para(c.out, "K and V of this step hold " + b(kv_cache_bytes(fd)) + ". Read once at " +
                                          units::rate(gpu.effective_hbm_bandwidth(), "B/s") + " they take " +
                                          units::seconds(floor_s) + ": FA2 is predicted " + units::ratio(f.time_s / floor_s) +
                                          " slower than that floor. The step's matmul FLOPs over the bytes of K and V read once: " +
                                          num(intensity, 3) + " FLOPs per byte, against a ridge point of " + num(ridge, 3) +
                                          " (lesson 01, step 2): no schedule makes a decode step compute-bound.");
                    c.results["problem"] = p.describe();
                    c.results["sm_count"] = gpu.sm_count;
                    c.results["fa2_grid"] = k.grid;
                    c.results["fa2_waves"] = k.waves;
                    c.results["fa2_idle_sms"] = k.idle_sms;
                    c.results["fa2_sm_busy_fraction"] = k.sm_busy_fraction;
                    c.results["fa2_active_warps"] = kr.active_warps;
                    c.results["fa2_warps_per_block"] = kr.desc.warps;
                    c.results["fa2_predicted_s"] = f.time_s;
                    c.results["fa2_bound"] = k.bound;
                    c.results["kv_cache_bytes"] = kv_cache_bytes(fd);
                    c.results["kv_floor_s"] = floor_s;
                    c.results["fa2_over_floor"] = f.time_s / floor_s;
                    c.results["flops_per_kv_byte"] = intensity;
                    c.results["ridge_point"] = ridge;
                },
                "",
                R"PY(NK, KV_HEADS = 65536, 8  # the K/V cache's length and its heads (the lesson's --Nk and --kv-heads)
KV_SPLITS = None  # FlashDecoding's splits of the keys; None: flash-attention's heuristic (the lesson's --kv-splits)
DECODE = dict(PROBLEM, N=1, Nk=NK, kv_heads=KV_HEADS, causal=False)  # one new query row per head, the whole cache

def decode(algo, kv_heads=None, **tiles):
    """One decode step of `algo` (fa2 or flash_decoding) as fasim.simulate's dict."""
    return fasim.simulate(algo, gpu=GPU, **dict(DECODE, **({"kv_heads": kv_heads} if kv_heads else {})), **tiles)

def kernel(r, name):
    return next(k for k in r["kernels"] if k["name"] == name)

def read(r, *tensors, level="hbm"):
    return sum(r[level]["by_tensor"].get(t, {}).get("read_bytes", 0) for t in tensors)

def both(r, *tensors, level="hbm"):
    return sum(r[level]["by_tensor"].get(t, {}).get(k, 0) for t in tensors for k in ("read_bytes", "write_bytes"))

def kv_cache_bytes(p):  # K and V in memory, from a result's "problem": 2·B·KV·Nk·d·e
    return 2 * p["batch"] * p["kv_heads"] * p["Nk"] * p["d"] * {"fp32": 4, "fp16": 2, "bf16": 2}[p["dtype"]]

def kv_floor_s(p, gpu):  # the least time a decode step can take: K and V read once at the GPU's HBM bandwidth
    return kv_cache_bytes(p) / gpu["hbm_bandwidth_bytes_per_s"]

f, fd = decode("fa2"), decode("flash_decoding", kv_splits=KV_SPLITS)
k = f["kernels"][-1]  # FA2's kernel
g = f["gpu"]
floor_s = kv_floor_s(fd["problem"], fd["gpu"])
ridge = g.get(f"tensor_{PROBLEM['dtype']}_flops_per_s", g["fp32_flops_per_s"]) / g["hbm_bandwidth_bytes_per_s"]
intensity = f["flops"]["matmul"] / kv_cache_bytes(fd["problem"])
print(f"{describe(f['problem'])} on {g['name']} ({g['sm_count']} SMs)\n")
table(["FlashAttention-2", ""], [
    ["grid = B·H·⌈N/Br⌉", f"{k['grid']:,} blocks"],
    ["waves", f"{k['waves']:.2f}"],
    ["idle SMs", f"{k['idle_sms']} of {g['sm_count']}"],
    ["SM time busy", f"{k['sm_busy_fraction']:.0%}"],
    ["warps computing per block", f"{k['active_warps']} of {k['warps_per_block']}"],
    ["predicted time", quantity(f["time"]["predicted_s"], "s")],
])
print(f"\nBound by: {k['time']['bound']}.\n")
print(f"K and V of this step hold {quantity(kv_cache_bytes(fd['problem']), 'B')}. Read once at {quantity(g['hbm_bandwidth_bytes_per_s'], 'B/s')} "
      f"they take {quantity(floor_s, 's')}: FA2 is predicted {f['time']['predicted_s'] / floor_s:.3g}x slower than that floor. "
      f"The step's matmul FLOPs over the bytes of K and V read once: {intensity:.3g} FLOPs per byte, against a ridge point "
      f"of {ridge:.3g} (lesson 01, step 2): no schedule makes a decode step compute-bound.")
RESULTS["decode"] = dict(problem=describe(f["problem"]), sm_count=g["sm_count"], fa2_grid=k["grid"], fa2_waves=k["waves"],
                         fa2_idle_sms=k["idle_sms"], fa2_sm_busy_fraction=k["sm_busy_fraction"],
                         fa2_active_warps=k["active_warps"], fa2_warps_per_block=k["warps_per_block"],
                         fa2_predicted_s=f["time"]["predicted_s"], fa2_bound=k["time"]["bound"],
                         kv_cache_bytes=kv_cache_bytes(fd["problem"]), kv_floor_s=floor_s,
                         fa2_over_floor=f["time"]["predicted_s"] / floor_s, flops_per_kv_byte=intensity, ridge_point=ridge))PY"});

        L.step({"splits", "Split-KV: FlashDecoding spreads the keys over blocks",
                R"(FlashDecoding (Dao, Haziza, Massa and Sizov, 2023) adds a dimension to the
grid: the keys. Split s of a row walks only its share of the K/V tiles, with
FA2's online softmax, and writes a partial output O_s and its log-sum-exp
LSE_s to HBM in fp32; a second, small kernel combines the splits (step 3).
With grouped K/V heads and one query row, the query heads that share a K/V
head become the rows of one Q tile (as flash-attention does), so without a
split there are B·KV·⌈group/Br⌉ blocks.

How many splits? flash-attention's heuristic counts 2 blocks per SM as
slots. If the blocks without a split fill 80% of the slots, it does not
split. Otherwise, for each split count up to 128 (and up to the number of
K/V tiles) it computes waves = blocks × splits / slots and how well they use
the slots, efficiency = waves / ⌈waves⌉ (1 when the last wave is full), and
picks the fewest splits whose efficiency is at least 85% of the best. More
splits than that only add partial results to write, read and combine.

The table runs the simulator over split counts; try --kv-splits to add
yours, and --Nk or --kv-heads to see the choice change.)",
                [&](Ctx& c) {
                    const AlgorithmResult& f = sim_cached(fa2(), p, gpu);
                    const AlgorithmResult& one = sim_cached(flash_decoding(), p, gpu, splits(1));
                    const AlgorithmResult& h = sim_cached(flash_decoding(), p, gpu, splits(0));
                    const std::int64_t blocks = split_kernel(one).grid, tiles = ceil_div(p.Nk, h.tiles.Bc);
                    const std::int64_t slots = 2 * gpu.sm_count;  // what fa-sim hands the heuristic: 2 blocks per SM
                    const std::int64_t S = h.tiles.kv_splits;
                    // The heuristic's count, rounded as choose_tiles rounds it: to the splits that hold K/V tiles.
                    const std::int64_t picked = tile_rules::flash_decoding_splits(blocks, slots, tiles);
                    const bool agrees = ceil_div(tiles, ceil_div(tiles, picked)) == S;
                    const double waves = static_cast<double>(blocks * S) / static_cast<double>(slots);
                    print_para(c.out, p.describe() + " on " + gpu.name + "; FlashDecoding tiles " + std::to_string(h.tiles.Br) +
                                          " x " + std::to_string(h.tiles.Bc) + ", " + grouped(tiles) + " K/V tiles");
                    c.out << '\n';
                    Table g({"grid", "blocks", "idle SMs"}, "lrr");
                    g.row({"FA2: B·H·⌈N/Br⌉", grouped(main_timing(f).grid), std::to_string(main_timing(f).idle_sms)});
                    g.row({"FlashDecoding, 1 split", grouped(blocks), std::to_string(split_kernel(one).idle_sms)});
                    g.row({"FlashDecoding, " + plural(S, "split"), grouped(split_kernel(h).grid),
                           std::to_string(split_kernel(h).idle_sms)});
                    g.print(c.out);
                    c.out << "\nHow the simulator chose (its own words):\n";
                    for (const std::string& why : h.tiles.reasons) print_para(c.out, why, "- ", "  ");
                    c.out << '\n';
                    print_para(c.out, grouped(blocks) + " blocks × " + plural(S, "split") + " = " +
                                          grouped(blocks * S) + " blocks on " + grouped(slots) + " slots: " + fixed(waves, 2) +
                                          " waves, efficiency " + percent(waves / std::ceil(waves), 0) +
                                          ". (The simulator's own occupancy fits " +
                                          std::to_string(kernel(h, "flash_decoding_split").occupancy.blocks_per_sm) +
                                          " such blocks per SM: " + fixed(split_kernel(h).waves, 2) + " of its waves.)" +
                                          (agrees ? "" : " The heuristic's function DIFFERS from the simulator's choice."));
                    c.out << '\n';

                    std::set<std::int64_t> asked{S};
                    for (std::int64_t s = 1; s <= std::min<std::int64_t>(tiles, 256); s *= 2) asked.insert(s);
                    if (kv_splits > 0) asked.insert(kv_splits);
                    // The count --kv-splits runs (rounded like any other), or none.
                    const std::int64_t yours = kv_splits > 0 ? sim_cached(flash_decoding(), p, gpu, chosen).tiles.kv_splits : 0;
                    std::set<std::int64_t> shown;
                    Table t({"splits", "blocks", "idle SMs", "SM busy", "predicted", "bound (split kernel)"}, "rrrrrl");
                    Json rows = Json::array();
                    for (std::int64_t s : asked) {
                        const AlgorithmResult& r = sim_cached(flash_decoding(), p, gpu, splits(s));
                        const std::int64_t used = r.tiles.kv_splits;  // rounded to the splits that hold tiles
                        if (!shown.insert(used).second) continue;
                        const KernelTiming& k = split_kernel(r);
                        const std::string mark = std::string(used == S ? "*" : "") + (used == yours ? "+" : "");
                        t.row({mark + std::to_string(used), grouped(k.grid), std::to_string(k.idle_sms),
                               percent(k.sm_busy_fraction, 0), units::seconds(r.time_s), bound_term(k.bound)});
                        rows.push_back({{"splits", used}, {"grid", k.grid}, {"idle_sms", k.idle_sms},
                                        {"sm_busy_fraction", k.sm_busy_fraction}, {"predicted_s", r.time_s},
                                        {"combine_s", combine_s(r)}, {"bound", k.bound}});
                    }
                    t.print(c.out);
                    c.out << "  * flash-attention's heuristic" << (yours > 0 ? "   + --kv-splits" : "") << "\n\n";
                    const auto fastest = std::min_element(rows.begin(), rows.end(), [](const Json& x, const Json& y) {
                        return x["predicted_s"].get<double>() < y["predicted_s"].get<double>();
                    });
                    const std::int64_t fastest_splits = (*fastest)["splits"].get<std::int64_t>();
                    const double fastest_s = (*fastest)["predicted_s"].get<double>();
                    if (fastest_splits != S) {
                        print_para(c.out, "The fastest count in the table is " + std::to_string(fastest_splits) + " (" +
                                              units::seconds(fastest_s) + "): the heuristic fills the slots it assumes, not "
                                              "the simulator's occupancy, and lands " + percent(h.time_s / fastest_s - 1, 1) +
                                              " slower.");
                        c.out << '\n';
                    }
                    const std::string your_speedup =
                        yours > 0 && yours != S
                            ? "; with your " + plural(yours, "split") + ", " +
                                  units::ratio(f.time_s / sim_cached(flash_decoding(), p, gpu, chosen).time_s)
                            : "";
                    print_para(c.out, "With " + plural(S, "split") + " FlashDecoding is predicted " +
                                          units::ratio(f.time_s / h.time_s) + " faster than FA2 (" + units::seconds(h.time_s) +
                                          " against " + units::seconds(f.time_s) + ")" + your_speedup + ".");
                    c.results["fa2_grid"] = main_timing(f).grid;
                    c.results["blocks_without_split"] = blocks;
                    c.results["kv_tiles"] = tiles;
                    c.results["slots"] = slots;
                    c.results["heuristic_splits"] = S;
                    c.results["heuristic_agrees"] = agrees;
                    c.results["grid_with_splits"] = split_kernel(h).grid;
                    c.results["idle_sms_with_splits"] = split_kernel(h).idle_sms;
                    c.results["fd_predicted_s"] = h.time_s;
                    c.results["fa2_predicted_s"] = f.time_s;
                    c.results["speedup"] = f.time_s / h.time_s;
                    c.results["by_splits"] = rows;
                },
                "",
                R"PY(import math

def heuristic_splits(blocks, slots, kv_tiles):
    """flash-attention's choice of splits (its flash_api.cpp), as the text above describes it."""
    if blocks >= 0.8 * slots:
        return 1
    per_split = lambda s: -(-kv_tiles // s)
    eligible = [s for s in range(1, min(128, slots, kv_tiles) + 1) if s == 1 or per_split(s) != per_split(s - 1)]
    efficiency = {s: blocks * s / slots / math.ceil(blocks * s / slots) for s in eligible}
    best = max(efficiency.values(), default=0)
    return next((s for s in eligible if efficiency[s] >= 0.85 * best), 1)

def combine_s(r):  # the combine kernel's time (no combine kernel with one split)
    return sum(k["time"]["predicted_s"] for k in r["kernels"] if k["name"] == "flash_decoding_combine")

f = fasim.simulate("fa2", gpu=GPU, **DECODE)
one = fasim.simulate("flash_decoding", kv_splits=1, gpu=GPU, **DECODE)  # no split
h = fasim.simulate("flash_decoding", gpu=GPU, **DECODE)  # the splits flash-attention's heuristic picks
split = lambda r: kernel(r, "flash_decoding_split")
blocks, kv_tiles = split(one)["grid"], -(-NK // h["tiles"]["Bc"])
slots = 2 * h["gpu"]["sm_count"]  # flash-attention counts 2 blocks per SM
S = h["tiles"]["kv_splits"]
picked = heuristic_splits(blocks, slots, kv_tiles)
agrees = -(-kv_tiles // -(-kv_tiles // picked)) == S  # rounded to the splits that hold K/V tiles, as fa-sim rounds
waves = blocks * S / slots
print(f"{describe(h['problem'])} on {h['gpu']['name']}; FlashDecoding tiles {h['tiles']['Br']} x {h['tiles']['Bc']}, "
      f"{kv_tiles:,} K/V tiles\n")
table(["grid", "blocks", "idle SMs"], [
    ["FA2: B·H·⌈N/Br⌉", f["kernels"][-1]["grid"], f["kernels"][-1]["idle_sms"]],
    ["FlashDecoding, 1 split", blocks, split(one)["idle_sms"]],
    [f"FlashDecoding, {S} splits", split(h)["grid"], split(h)["idle_sms"]],
])
print("\nHow the simulator chose (its own words):")
for why in h["tiles"]["reasons"]:
    print("- " + why)
print(f"\n{blocks:,} blocks × {S} splits = {blocks * S:,} blocks on {slots:,} slots: {waves:.2f} waves, efficiency "
      f"{waves / math.ceil(waves):.0%}. (The simulator's own occupancy fits {split(h)['blocks_per_sm']} such blocks per SM: "
      f"{split(h)['waves']:.2f} of its waves.) heuristic_splits() above picks {picked}"
      + (", as the simulator did.\n" if agrees else ": it DIFFERS from the simulator's choice.\n"))

asked = {S, *(2 ** i for i in range(20) if 2 ** i <= min(kv_tiles, 256))} | ({KV_SPLITS} if KV_SPLITS else set())
yours = decode("flash_decoding", kv_splits=KV_SPLITS)["tiles"]["kv_splits"] if KV_SPLITS else 0
rows, shown = [], []
for s in sorted(asked):
    r = decode("flash_decoding", kv_splits=s)
    used = r["tiles"]["kv_splits"]  # rounded to the splits that hold tiles
    if any(x["splits"] == used for x in rows):
        continue
    k = split(r)
    rows.append(dict(splits=used, grid=k["grid"], idle_sms=k["idle_sms"], sm_busy_fraction=k["sm_busy_fraction"],
                     predicted_s=r["time"]["predicted_s"], combine_s=combine_s(r), bound=k["time"]["bound"]))
    shown.append([("*" if used == S else "") + ("+" if used == yours else "") + str(used), k["grid"], k["idle_sms"],
                  f"{k['sm_busy_fraction']:.0%}", quantity(r["time"]["predicted_s"], "s"),
                  k["time"]["bound"].split("(")[0].split(",")[0].strip()])
table(["splits", "blocks", "idle SMs", "SM busy", "predicted", "bound (split kernel)"], shown)
print("  * flash-attention's heuristic" + ("   + KV_SPLITS" if yours else "") + "\n")
fastest = min(rows, key=lambda x: x["predicted_s"])
if fastest["splits"] != S:
    print(f"The fastest count in the table is {fastest['splits']} ({quantity(fastest['predicted_s'], 's')}): the heuristic "
          f"fills the slots it assumes, not the simulator's occupancy, and lands "
          f"{h['time']['predicted_s'] / fastest['predicted_s'] - 1:.1%} slower.\n")
t_fa2, t_fd = f["time"]["predicted_s"], h["time"]["predicted_s"]
print(f"With {S} splits FlashDecoding is predicted {t_fa2 / t_fd:.3g}x faster than FA2 ({quantity(t_fd, 's')} against "
      f"{quantity(t_fa2, 's')}).")
RESULTS["splits"] = dict(fa2_grid=f["kernels"][-1]["grid"], blocks_without_split=blocks, kv_tiles=kv_tiles, slots=slots,
                         heuristic_splits=S, heuristic_agrees=agrees, grid_with_splits=split(h)["grid"],
                         idle_sms_with_splits=split(h)["idle_sms"], fd_predicted_s=t_fd, fa2_predicted_s=t_fa2,
                         speedup=t_fa2 / t_fd, by_splits=rows)

import matplotlib.pyplot as plt
plt.semilogx([x["splits"] for x in rows], [x["predicted_s"] * 1e6 for x in rows], "o-", base=2, label="FlashDecoding")
plt.axhline(RESULTS["decode"]["kv_floor_s"] * 1e6, color="gray", ls="--", label="K and V once at HBM bandwidth")
plt.axvline(S, color="C1", ls=":", label="flash-attention's heuristic")
plt.xlabel("splits of the keys")
plt.ylabel("predicted time (us)")
plt.title(RESULTS["decode"]["problem"] + " on " + h["gpu"]["name"], fontsize=9)
plt.legend()
plt.show())PY"});

        L.step({"combine", "The combine on real numbers: why exp(LSE_s − LSE) is exact",
                R"(Split s of a row sees only its keys J_s. It runs FA2's loop over them and
ends with, for x_j = scale·q·k_j,

    O_s   = Σ_{j∈J_s} exp(x_j − LSE_s)·v_j     (softmax over its own keys)
    LSE_s = log Σ_{j∈J_s} exp(x_j)              (the log of their mass)

The combine kernel reads every split's LSE_s and O_s and computes

    LSE = log Σ_s exp(LSE_s)
    O   = Σ_s exp(LSE_s − LSE)·O_s

This is exact, not an approximation: exp(LSE_s − LSE)·O_s equals
Σ_{j∈J_s} exp(x_j − LSE)·v_j, the split's keys weighted by their true softmax
probabilities, and adding the splits adds every key once. The weight
exp(LSE_s − LSE) is the share of the row's softmax mass that the split's keys
hold, so the weights sum to 1. (The kernel subtracts the largest LSE_s first,
as the online softmax subtracts m, so no exp overflows.)

The trace runs both kernels on real numbers: 4 query heads share 2 K/V
heads, so each Q tile holds the 2 query heads of one group as its rows, and
"head k" in the trace is K/V head k with query heads 2k and 2k + 1; in the
split kernel, block s is split s. After the trace, each split's LSE_s and
weight are compared with the float64 reference on that split's keys alone,
and each query head's O with exact attention against the K/V head it reads.)",
                [&](Ctx& c) {
                    AttentionProblem tp = decode_step(make_problem(1, kTraceHeads, 1, kTraceD, p.dtype), trace_nk, kTraceKvHeads);
                    TileRequest req = splits(trace_splits);
                    req.Br = kTraceHeads;
                    req.Bc = kTraceBc;
                    const TileConfig cfg = choose_tiles(flash_decoding(), tp, gpu, req);
                    const std::int64_t S = cfg.kv_splits, per_split = ceil_div(ceil_div(tp.Nk, cfg.Bc), S);
                    const TracedRun t = traced_run(flash_decoding(), tp, gpu, cfg, static_cast<std::uint64_t>(seed),
                                                   {"O_partial", "LSE_partial"});
                    print_para(c.out, tp.describe() + ", Br = " + std::to_string(cfg.Br) + ", Bc = " + std::to_string(cfg.Bc) +
                                          ", " + std::to_string(S) + " splits; Q, K, V ~ N(0,1), seed " + std::to_string(seed) +
                                          "; values shown for at most 4 rows and 4 columns.");
                    c.out << '\n' << t.trace << '\n';

                    // The partials are stored per (K/V head, split), one row per query head of the group
                    // (one query row: the group's heads are the rows of a Q tile).
                    const std::int64_t group = tp.group_size();
                    Table tab({"head", "K/V", "split", "keys", "LSE_s", "exact", "weight", "exact share"}, "rrrlrrrr");
                    Json heads = Json::array();
                    bool all_exact = true;
                    double worst_weight_error = 0;
                    for (std::int64_t h = 0; h < tp.batch_heads(); ++h) {
                        const std::int64_t kv = tp.kv_head_of(h), row = h % group;
                        const auto hh = static_cast<std::size_t>(h), kk = static_cast<std::size_t>(kv);
                        const reference::Matrix& K = t.K[kk];
                        const reference::Matrix& V = t.V[kk];
                        const reference::AttentionResult exact = reference::exact_attention(t.Q[hh], K, V);
                        const double lse = t.run.lse[hh](0);
                        double weight_sum = 0;
                        bool partials_exact = true;
                        for (std::int64_t s = 0; s < S; ++s) {
                            const auto slot = static_cast<std::size_t>(kv * S + s);
                            const std::int64_t k0 = s * per_split * cfg.Bc, k1 = std::min(tp.Nk, (s + 1) * per_split * cfg.Bc);
                            const reference::Matrix Ks = K.middleRows(k0, k1 - k0), Vs = V.middleRows(k0, k1 - k0);
                            const reference::AttentionResult part = reference::exact_attention(t.Q[hh], Ks, Vs);
                            const double lse_s = t.kept.at("LSE_partial")[slot](0, row);
                            const reference::Matrix O_s = t.kept.at("O_partial")[slot].row(row);
                            const reference::Vector lse_s_run = reference::Vector::Constant(1, lse_s);
                            partials_exact &= reference::check_tolerance(O_s, t.Q[hh], Ks, Vs, {}, tp.dtype).pass &&
                                              reference::check_lse(lse_s_run, t.Q[hh], Ks, {}, part).pass;
                            const double weight = std::exp(lse_s - lse), share = std::exp(part.lse(0) - exact.lse(0));
                            weight_sum += weight;
                            worst_weight_error = std::max(worst_weight_error, std::fabs(weight - share));
                            tab.row({std::to_string(h), std::to_string(kv), std::to_string(s),
                                     std::to_string(k0) + ".." + std::to_string(k1 - 1), fixed(lse_s, 4), fixed(part.lse(0), 4),
                                     fixed(weight, 6), fixed(share, 6)});
                        }
                        const reference::ToleranceCheck o = reference::check_tolerance(t.run.O[hh], t.Q[hh], K, V, {}, tp.dtype);
                        const bool lse_ok = reference::check_lse(t.run.lse[hh], t.Q[hh], K, {}, exact).pass;
                        all_exact &= o.pass && lse_ok && partials_exact;
                        heads.push_back({{"head", h}, {"kv_head", kv}, {"lse", lse}, {"exact_lse", exact.lse(0)},
                                         {"weight_sum", weight_sum}, {"max_error", o.error}, {"allowed_error", o.bound},
                                         {"partials_equal_exact", partials_exact}, {"equals_exact", o.pass && lse_ok}});
                    }
                    tab.print(c.out);
                    c.out << '\n';
                    print_para(c.out, "LSE_s: what the split stored; weight: exp(LSE_s − LSE) from the stored values; exact: "
                                      "the float64 reference on the split's keys alone; exact share: that split's share of "
                                      "the row's softmax mass in float64. Largest gap between a weight and its exact share: " +
                                          num(worst_weight_error, 3) + ".");
                    c.out << '\n';
                    for (const Json& hj : heads)
                        print_para(c.out, "head " + std::to_string(hj["head"].get<std::int64_t>()) + ": weights sum to " +
                                              fixed(hj["weight_sum"].get<double>(), 6) + "; max |O - O_exact| = " +
                                              num(hj["max_error"].get<double>(), 3) + ", allowed " +
                                              num(hj["allowed_error"].get<double>(), 3) + " -> " +
                                              (hj["equals_exact"].get<bool>() && hj["partials_equal_exact"].get<bool>()
                                                   ? "equals exact attention."
                                                   : "DIFFERS from exact attention."));
                    c.results["problem"] = tp.describe();
                    c.results["splits"] = S;
                    c.results["heads"] = heads;
                    c.results["max_weight_error"] = worst_weight_error;
                    c.results["equals_exact"] = all_exact;
                },
                "",
                R"PY(TRACE_NK, TRACE_SPLITS, SEED = 8, 2, 1  # the traced problem's cached keys and splits, and the seed of Q, K, V
H, KV, D, BC = 4, 2, 4, 4  # 4 query heads sharing 2 K/V heads, d = 4, K/V tiles of 4 keys
dtype = PROBLEM["dtype"]
rng = np.random.default_rng(SEED)
Q = rng.standard_normal((1, H, 1, D))
K, V = (rng.standard_normal((1, KV, TRACE_NK, D)) for _ in range(2))
steps = fasim.trace("flash_decoding", Q, K, V, Br=H, Bc=BC, kv_splits=TRACE_SPLITS, dtype=dtype)
out = fasim.run("flash_decoding", Q, K, V, Br=H, Bc=BC, kv_splits=TRACE_SPLITS, dtype=dtype)
S = out["tiles"]["kv_splits"]
print(f"{describe(out['problem'])}, Br = {H}, Bc = {BC}, {S} splits; Q, K, V ~ N(0,1), seed {SEED}; "
      "the row statistics' first 4 values\n")
partials = {}  # (tensor, K/V head * S + split) -> the rows the split stored, one per query head of the group
for s in steps:
    if s["kind"] == "kernel":
        print(f"kernel {s['kernel']}: {s['role']} (grid {s['grid']})")
    elif s["kind"] == "block":
        print(f"block {s['block']} (head {s['head']})")
    else:
        source = s["region"]["text"] if s["region"] else ", ".join(s["operands"])
        v = s["values"]
        shown = np.array2string(v[:4, 0], precision=3) if v is not None and v.ndim == 2 and v.shape[1] == 1 else ""
        print(f"  {s['op'] or s['kind']:8} {s['result'] or '':7} <- {source:22} {shown}".rstrip())
        if s["kind"] == "store" and s["region"]["tensor"] in ("O_partial", "LSE_partial"):
            partials[s["region"]["tensor"], s["region"]["head"]] = s["values"]

# Each split's LSE_s and weight against float64 on the inputs as the run stores them
q, k, v = (x.astype(np.float16 if dtype == "fp16" else np.float32).astype(np.float64)[0] for x in (Q, K, V))
group, per_split = H // KV, -(-(-(-TRACE_NK // BC)) // S)  # query heads per K/V head; K/V tiles per split
logsumexp = lambda x: x.max() + np.log(np.exp(x - x.max()).sum())
rows, all_exact, worst = [], True, 0.0
for h in range(H):
    kv, row = h // group, h % group
    x = k[kv] @ q[h, 0] / np.sqrt(D)  # the row's scores
    lse_exact, lse = logsumexp(x), out["lse"][0, h, 0]
    O_exact = np.exp(x - lse_exact) @ v[kv]
    head_exact = np.abs(out["O"][0, h, 0] - O_exact).max() < 1e-2 and abs(lse - lse_exact) < 1e-2
    weight_sum = 0.0
    for s in range(S):
        k0, k1 = s * per_split * BC, min(TRACE_NK, (s + 1) * per_split * BC)
        lse_s, O_s = partials["LSE_partial", kv * S + s][row, 0], partials["O_partial", kv * S + s][row]
        part_lse = logsumexp(x[k0:k1])
        part_O = np.exp(x[k0:k1] - part_lse) @ v[kv, k0:k1]
        head_exact &= abs(lse_s - part_lse) < 1e-2 and np.abs(O_s - part_O).max() < 1e-2
        weight, share = np.exp(lse_s - lse), np.exp(part_lse - lse_exact)
        weight_sum += weight
        worst = max(worst, abs(weight - share))
        rows.append([h, kv, s, f"{k0}..{k1 - 1}", f"{lse_s:.4f}", f"{part_lse:.4f}", f"{weight:.6f}", f"{share:.6f}"])
    all_exact &= bool(head_exact)
    print(f"head {h}: weights sum to {weight_sum:.6f}; max |O - O_exact| = {np.abs(out['O'][0, h, 0] - O_exact).max():.3g} -> "
          + ("equals exact attention." if head_exact else "DIFFERS from exact attention."))
print()
table(["head", "K/V", "split", "keys", "LSE_s", "exact", "weight", "exact share"], rows)
print(f"\nLSE_s: what the split stored; weight: exp(LSE_s − LSE) from the stored values; exact: float64 on the split's "
      f"keys alone; exact share: that split's share of the row's softmax mass in float64. Largest gap between a weight "
      f"and its exact share: {worst:.3g}.")
RESULTS["combine"] = dict(problem=describe(out["problem"]), splits=S, equals_exact=all_exact))PY"});

        L.step({"cost", "What the combine costs",
                R"(Splitting is not free. Each split writes its partial row per query head,
O_s (d fp32 numbers) and LSE_s (one), and the combine kernel reads them all
back: 2·S·B·H·(d + 1)·4 bytes through HBM in the papers' sense, besides Q
read once per split. Against K and V, 2·B·KV·Nk·d·e bytes, that is small for
a long cache: the partials grow with the splits and the query heads, K and V
with the cache's length and the K/V heads. The combine is also a second
kernel, with its launch, and it has one block per query row (B·H·N blocks,
whatever the splits): few beside the split kernel's, and it reads every
split's partials of its row.

When does it matter? Multi-query attention (one K/V head) divides K and V by
the group size, but not the partials: they belong to the query heads. The
second table changes only the K/V heads (the splits are the heuristic's for
each, or --kv-splits).)",
                [&](Ctx& c) {
                    const AlgorithmResult& r = sim_cached(flash_decoding(), p, gpu, chosen);
                    print_para(c.out, p.describe() + ", FlashDecoding with " + plural(r.tiles.kv_splits, "split") + " on " +
                                          gpu.name);
                    c.out << '\n';
                    Table t({"tensor", "HBM read", "HBM written", "DRAM (after L2)"}, "lrrr");
                    for (const std::string& n : tensor_names({&r.hbm}))
                        t.row({n, b(read_of(r.hbm, n)), b(write_of(r.hbm, n)), b(both_of(r.dram, n))});
                    t.row({"all", b(r.hbm.read_bytes()), b(r.hbm.write_bytes()), b(r.dram.total())});
                    t.print(c.out);
                    c.out << '\n';
                    const double comb = combine_s(r);
                    if (r.tiles.kv_splits == 1)
                        print_para(c.out, "One split: no partials and no combine kernel; FlashDecoding is FA2 with the decode "
                                          "kernel's tiles and its packed rows. Try --kv-splits 2 or a longer --Nk.");
                    else
                        print_para(c.out, "The partials' round trip: " + b(partial_bytes(r)) + ", " +
                                              percent(ratio(partial_bytes(r), kv_read(r)), 2) + " of the " + b(kv_read(r)) +
                                              " of K and V; after the simulator's L2, " +
                                              b(both_of(r.dram, "O_partial") + both_of(r.dram, "LSE_partial")) +
                                              " of them reach DRAM. The combine kernel is predicted to take " + units::seconds(comb) +
                                              " of " + units::seconds(r.time_s) + " (" + percent(comb / r.time_s, 1) + ").");
                    c.out << '\n';
                    std::vector<std::int64_t> kvs{p.heads, kv_heads, 1};
                    kvs.erase(std::unique(kvs.begin(), kvs.end()), kvs.end());
                    Table m({"K/V heads", "splits", "K and V", "partials", "partials/KV", "combine", "blocks", "of time"},
                            "rrrrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t kv : kvs) {
                        const AlgorithmResult& q = sim_cached(flash_decoding(), decode_step(p, p.Nk, kv), gpu, chosen);
                        const std::int64_t blocks = q.tiles.kv_splits > 1 ? timing(q, "flash_decoding_combine").grid : 0;
                        m.row({std::to_string(kv), std::to_string(q.tiles.kv_splits), b(kv_read(q)), b(partial_bytes(q)),
                               percent(ratio(partial_bytes(q), kv_read(q)), 2), units::seconds(combine_s(q)), grouped(blocks),
                               percent(combine_s(q) / q.time_s, 1)});
                        rows.push_back({{"kv_heads", kv}, {"splits", q.tiles.kv_splits}, {"kv_bytes", kv_read(q)},
                                        {"partial_bytes", partial_bytes(q)}, {"combine_s", combine_s(q)}, {"combine_grid", blocks},
                                        {"predicted_s", q.time_s}});
                    }
                    m.print(c.out);
                    c.out << '\n';
                    const Json& few = rows.back();
                    if (few["combine_grid"] > 0)
                        print_para(c.out, "With " + std::to_string(few["kv_heads"].get<std::int64_t>()) + " K/V head" +
                                          (few["kv_heads"] == 1 ? "" : "s") + " the partials are " +
                                          percent(few["partial_bytes"].get<double>() / few["kv_bytes"].get<double>(), 1) +
                                          " of K and V, and the combine, on " + grouped(few["combine_grid"].get<std::int64_t>()) +
                                          " block" + (few["combine_grid"] == 1 ? "" : "s") + ", takes " +
                                          percent(few["combine_s"].get<double>() / few["predicted_s"].get<double>(), 0) +
                                          " of the step.");
                    c.results["splits"] = r.tiles.kv_splits;
                    c.results["o_partial_bytes"] = both_of(r.hbm, "O_partial");
                    c.results["lse_partial_bytes"] = both_of(r.hbm, "LSE_partial");
                    c.results["partial_bytes"] = partial_bytes(r);
                    c.results["kv_bytes"] = kv_read(r);
                    c.results["partial_dram_bytes"] = both_of(r.dram, "O_partial") + both_of(r.dram, "LSE_partial");
                    c.results["combine_s"] = comb;
                    c.results["predicted_s"] = r.time_s;
                    c.results["by_kv_heads"] = rows;
                },
                "",
                R"PY(r = fasim.simulate("flash_decoding", kv_splits=KV_SPLITS, gpu=GPU, **DECODE)
print(f"{describe(r['problem'])}, FlashDecoding with {r['tiles']['kv_splits']} splits on {r['gpu']['name']}\n")
table(["tensor", "HBM read", "HBM written", "DRAM (after L2)"],
      [[name, quantity(x["read_bytes"], "B"), quantity(x["write_bytes"], "B"), quantity(both(r, name, level="dram"), "B")]
       for name, x in r["hbm"]["by_tensor"].items()]
      + [["all", quantity(r["hbm"]["read_bytes"], "B"), quantity(r["hbm"]["write_bytes"], "B"),
          quantity(r["dram"]["read_bytes"] + r["dram"]["write_bytes"], "B")]])
partials, kv = both(r, "O_partial", "LSE_partial"), read(r, "K", "V")
partial_dram = both(r, "O_partial", "LSE_partial", level="dram")
comb, total = combine_s(r), r["time"]["predicted_s"]
if r["tiles"]["kv_splits"] == 1:
    print("\nOne split: no partials and no combine kernel; FlashDecoding is FA2 with the decode kernel's tiles and its "
          "packed rows. Try KV_SPLITS = 2 or a longer NK.")
else:
    print(f"\nThe partials' round trip: {quantity(partials, 'B')}, {partials / kv:.2%} of the {quantity(kv, 'B')} of K and V; "
          f"after the simulator's L2, {quantity(partial_dram, 'B')} of them reach DRAM. The combine kernel is predicted to take "
          f"{quantity(comb, 's')} of {quantity(total, 's')} ({comb / total:.1%}).")

KV_CHOICES = [h for i, h in enumerate([PROBLEM["heads"], KV_HEADS, 1]) if i == 0 or h != [PROBLEM["heads"], KV_HEADS, 1][i - 1]]
rows = []
for kvh in KV_CHOICES:
    q = fasim.simulate("flash_decoding", kv_splits=KV_SPLITS, gpu=GPU, **dict(DECODE, kv_heads=kvh))
    blocks = kernel(q, "flash_decoding_combine")["grid"] if q["tiles"]["kv_splits"] > 1 else 0
    rows.append(dict(kv_heads=kvh, splits=q["tiles"]["kv_splits"], kv_bytes=read(q, "K", "V"),
                     partial_bytes=both(q, "O_partial", "LSE_partial"), combine_s=combine_s(q), combine_grid=blocks,
                     predicted_s=q["time"]["predicted_s"]))
print()
table(["K/V heads", "splits", "K and V", "partials", "partials/KV", "combine", "blocks", "of time"],
      [[x["kv_heads"], x["splits"], quantity(x["kv_bytes"], "B"), quantity(x["partial_bytes"], "B"),
        f"{x['partial_bytes'] / x['kv_bytes']:.2%}", quantity(x["combine_s"], "s"), x["combine_grid"],
        f"{x['combine_s'] / x['predicted_s']:.1%}"] for x in rows])
few = rows[-1]
if few["combine_grid"] > 0:
    print(f"\nWith {few['kv_heads']} K/V head{'' if few['kv_heads'] == 1 else 's'} the partials are "
          f"{few['partial_bytes'] / few['kv_bytes']:.1%} of K and V, and the combine, on {few['combine_grid']:,} "
          f"block{'' if few['combine_grid'] == 1 else 's'}, takes {few['combine_s'] / few['predicted_s']:.0%} of the step.")
RESULTS["cost"] = dict(splits=r["tiles"]["kv_splits"], o_partial_bytes=both(r, "O_partial"),
                       lse_partial_bytes=both(r, "LSE_partial"), partial_bytes=partials, kv_bytes=kv,
                       partial_dram_bytes=partial_dram, combine_s=comb, predicted_s=total, by_kv_heads=rows))PY"});

        L.step({"gqa", "GQA's saving: K/V heads shared by query heads",
                R"(Grouped-query attention (GQA) lets a group of query heads share one K/V
head; multi-query attention (MQA) is one K/V head for all. The model then
stores, and every decode step reads, H/KV times less K and V. The K/V cache
is what fills a GPU's memory when contexts are long and batches large.

FlashDecoding reads each K/V head once for its whole group: the group's
query heads are the rows of one Q tile. FA2 gives every query head its own
blocks, so in the papers' HBM count it reads a K/V head once per query head
of its group and saves nothing. The L2 saves it: a launch orders its blocks
by head, so a group's query heads run side by side, and all but the first
find their K/V tiles in L2 (FA2's DRAM column). Whether FA2's time follows
depends on what bounds it: DRAM, or its blocks' one-row products.)",
                [&](Ctx& c) {
                    std::vector<std::int64_t> kvs{p.heads, kv_heads, 1};
                    kvs.erase(std::unique(kvs.begin(), kvs.end()), kvs.end());
                    c.out << "B=" << p.batch << " H=" << p.heads << " N=1 Nk=" << p.Nk << " d=" << p.d << ' ' << dtype_name(p.dtype)
                          << " on " << gpu.name << "; one attention layer\n\n";
                    Table t({"K/V heads", "group", "K/V cache", "FlashDec K+V", "time", "FA2 K+V", "DRAM", "time"}, "rrrrrrrr");
                    Json rows = Json::array();
                    for (std::int64_t kv : kvs) {
                        const AttentionProblem q = decode_step(p, p.Nk, kv);
                        const AlgorithmResult& fd = sim_cached(flash_decoding(), q, gpu, chosen);
                        const AlgorithmResult& f = sim_cached(fa2(), q, gpu);
                        t.row({std::to_string(kv), std::to_string(q.group_size()), b(kv_cache_bytes(fd)), b(kv_read(fd)),
                               units::seconds(fd.time_s), b(kv_read(f)), b(both_of(f.dram, "K") + both_of(f.dram, "V")),
                               units::seconds(f.time_s)});
                        rows.push_back({{"kv_heads", kv}, {"group", q.group_size()}, {"kv_cache_bytes", kv_cache_bytes(fd)},
                                        {"fd_kv_read_bytes", kv_read(fd)}, {"fd_predicted_s", fd.time_s},
                                        {"fa2_kv_read_bytes", kv_read(f)},
                                        {"fa2_kv_dram_bytes", both_of(f.dram, "K") + both_of(f.dram, "V")},
                                        {"fa2_predicted_s", f.time_s}});
                    }
                    t.print(c.out);
                    c.out << '\n';
                    const Json &most = rows.front(), &fewest = rows.back();
                    auto change = [](const std::string& from, const std::string& to, bool plural_subject) {
                        const std::string s = plural_subject ? "" : "s";
                        return from == to ? "stay" + s + " at " + from : (plural_subject ? "go" : "goes") + (" from " + from) + " to " + to;
                    };
                    auto at = [](const Json& row, const char* key) { return row[key].get<double>(); };
                    const double bytes_saved = at(most, "fd_kv_read_bytes") / at(fewest, "fd_kv_read_bytes");
                    const double time_saved = at(most, "fd_predicted_s") / at(fewest, "fd_predicted_s");
                    if (rows.size() > 1)
                        print_para(c.out, "From " + std::to_string(most["kv_heads"].get<std::int64_t>()) + " K/V heads to " +
                                              std::to_string(fewest["kv_heads"].get<std::int64_t>()) + ", FlashDecoding reads " +
                                              units::ratio(bytes_saved) + " fewer bytes of K and V and is predicted " +
                                              units::ratio(time_saved) + " faster" +
                                              (time_saved < 0.9 * bytes_saved
                                                   ? " (less: launches and the combine of step 4 do not shrink)"
                                                   : "") +
                                              ". FA2's reads of K and V " + change(b(most["fa2_kv_read_bytes"].get<std::int64_t>()),
                                                                                  b(fewest["fa2_kv_read_bytes"].get<std::int64_t>()), true) +
                                              " (DRAM after the simulator's L2: " +
                                              b(fewest["fa2_kv_dram_bytes"].get<std::int64_t>()) + " with " +
                                              plural(fewest["kv_heads"].get<std::int64_t>(), "K/V head") +
                                              "), and its predicted time " +
                                              change(units::seconds(at(most, "fa2_predicted_s")),
                                                     units::seconds(at(fewest, "fa2_predicted_s")), false) + ".");
                    c.results["by_kv_heads"] = rows;
                },
                "",
                R"PY(p = DECODE
print(f"B={p['batch']} H={p['heads']} N=1 Nk={NK} d={p['d']} {p['dtype']} on {fasim.gpu(GPU)['name']}; one attention layer\n")
rows = []
for kvh in KV_CHOICES:
    fd = fasim.simulate("flash_decoding", kv_splits=KV_SPLITS, gpu=GPU, **dict(DECODE, kv_heads=kvh))
    f = fasim.simulate("fa2", gpu=GPU, **dict(DECODE, kv_heads=kvh))
    rows.append(dict(kv_heads=kvh, group=p["heads"] // kvh, kv_cache_bytes=kv_cache_bytes(fd["problem"]),
                     fd_kv_read_bytes=read(fd, "K", "V"), fd_predicted_s=fd["time"]["predicted_s"],
                     fa2_kv_read_bytes=read(f, "K", "V"), fa2_kv_dram_bytes=both(f, "K", "V", level="dram"),
                     fa2_predicted_s=f["time"]["predicted_s"]))
table(["K/V heads", "group", "K/V cache", "FlashDec K+V", "time", "FA2 K+V", "DRAM", "time"],
      [[x["kv_heads"], x["group"], quantity(x["kv_cache_bytes"], "B"), quantity(x["fd_kv_read_bytes"], "B"),
        quantity(x["fd_predicted_s"], "s"), quantity(x["fa2_kv_read_bytes"], "B"), quantity(x["fa2_kv_dram_bytes"], "B"),
        quantity(x["fa2_predicted_s"], "s")]
       for x in rows])
most, fewest = rows[0], rows[-1]
if len(rows) > 1:
    bytes_saved = most["fd_kv_read_bytes"] / fewest["fd_kv_read_bytes"]
    time_saved = most["fd_predicted_s"] / fewest["fd_predicted_s"]
    print(f"\nFrom {most['kv_heads']} K/V heads to {fewest['kv_heads']}, FlashDecoding reads {bytes_saved:.3g}x fewer bytes of "
          f"K and V and is predicted {time_saved:.3g}x faster"
          + (" (less: launches and the combine of step 4 do not shrink)" if time_saved < 0.9 * bytes_saved else "")
          + f". FA2 reads {quantity(most['fa2_kv_read_bytes'], 'B')} of K and V with {most['kv_heads']} K/V heads and "
          f"{quantity(fewest['fa2_kv_read_bytes'], 'B')} with {fewest['kv_heads']} (DRAM after the simulator's L2: "
          f"{quantity(fewest['fa2_kv_dram_bytes'], 'B')}); its predicted time goes from {quantity(most['fa2_predicted_s'], 's')} "
          f"to {quantity(fewest['fa2_predicted_s'], 's')}.")
RESULTS["gqa"] = dict(by_kv_heads=rows))PY"});

        L.step({"context", "Context length: where the splits pay",
                R"(The longer the context, the more each step reads and the more there is to
split. With a short cache both algorithms are quick and a kernel launch is a
good part of the time. As Nk grows FA2's few blocks take longer and longer,
each streaming its cache on one SM, while FlashDecoding approaches the time
to read K and V once at the HBM bandwidth. The sweep below runs both over Nk
with flash-attention's heuristic at every point (--kv-splits does not apply).)",
                [&](Ctx& c) {
                    SweepRequest req;
                    req.algos = {&fa2(), &flash_decoding()};
                    req.base = p;
                    req.parameter = SweepParameter::Nk;
                    for (std::int64_t v = 1024; v <= 262144; v *= 2) req.ns.push_back(v);
                    const auto by_nk = run_sweep(req, gpu);
                    c.out << "B=" << p.batch << " H=" << p.heads << " KV=" << p.kv_head_count() << " N=1 d=" << p.d << ' '
                          << dtype_name(p.dtype) << " on " << gpu.name << "\n\n";
                    Table t({"Nk", "FA2", "FlashDec", "speedup", "splits", "HBM floor", "floor/FlashDec"}, "rrrrrrr");
                    Json rows = Json::array();
                    std::int64_t first_dram = 0, first_near = 0;
                    for (std::size_t i = 0; i < by_nk.size(); ++i) {
                        const AlgorithmResult &f = by_nk[i][0], &fd = by_nk[i][1];
                        const double floor_s = kv_floor_s(fd, gpu), at_floor = floor_s / fd.time_s;
                        const std::string bound = split_kernel(fd).bound;
                        if (first_dram == 0 && bound.find("DRAM") != std::string::npos) first_dram = req.ns[i];
                        if (first_near == 0 && at_floor >= kNearFloor) first_near = req.ns[i];
                        t.row({grouped(req.ns[i]), units::seconds(f.time_s), units::seconds(fd.time_s),
                               units::ratio(f.time_s / fd.time_s), std::to_string(fd.tiles.kv_splits), units::seconds(floor_s),
                               percent(at_floor, 0)});
                        rows.push_back({{"Nk", req.ns[i]}, {"fa2_predicted_s", f.time_s}, {"fd_predicted_s", fd.time_s},
                                        {"speedup", f.time_s / fd.time_s}, {"splits", fd.tiles.kv_splits}, {"kv_floor_s", floor_s},
                                        {"fd_split_bound", bound}});
                    }
                    t.print(c.out);
                    c.out << '\n';
                    const Json &lo = rows.front(), &hi = rows.back();
                    auto from = [](std::int64_t n) {
                        return n > 0 ? "from Nk = " + grouped(n) : std::string("nowhere in this range");
                    };
                    print_para(c.out, "The speedup grows from " + units::ratio(lo["speedup"].get<double>()) + " at Nk = " +
                                          grouped(lo["Nk"].get<std::int64_t>()) + " to " + units::ratio(hi["speedup"].get<double>()) +
                                          " at Nk = " + grouped(hi["Nk"].get<std::int64_t>()) + ". FlashDecoding's split kernel is " +
                                          "bound by DRAM bandwidth " + from(first_dram) + "; counting the launches and the combine, " +
                                          "the whole step reaches " + percent(kNearFloor, 0) + " of the floor's speed " +
                                          from(first_near) + ". Below that, fixed costs weigh: each of its two kernels costs a "
                                          "launch of " + units::seconds(gpu.launch_overhead_s) + ", and at Nk = " +
                                          grouped(lo["Nk"].get<std::int64_t>()) + " the step takes " +
                                          units::seconds(lo["fd_predicted_s"].get<double>() - lo["kv_floor_s"].get<double>()) +
                                          " more than its floor.");
                    c.results["rows"] = rows;
                    c.results["first_dram_bound_nk"] = first_dram;
                    c.results["first_near_floor_nk"] = first_near;
                },
                "",
                R"PY(NEAR_FLOOR = 0.8  # "reaches the HBM floor": at least 80% of its speed
sizes = [1024 * 2 ** i for i in range(9)]  # Nk = 1024 ... 262144
sweep = fasim.sweep(["fa2", "flash_decoding"], parameter="Nk", values=sizes, gpu=GPU,
                    **{k: v for k, v in DECODE.items() if k != "Nk"})  # the heuristic's splits at every Nk
rows = []
for run in sweep["runs"]:
    f, fd = run["algorithms"]
    floor_s = kv_floor_s(run["problem"], sweep["gpu"])
    rows.append(dict(Nk=run["problem"]["Nk"], fa2_predicted_s=f["time"]["predicted_s"], fd_predicted_s=fd["time"]["predicted_s"],
                     speedup=f["time"]["predicted_s"] / fd["time"]["predicted_s"], splits=fd["tiles"]["kv_splits"],
                     kv_floor_s=floor_s, fd_split_bound=kernel(fd, "flash_decoding_split")["time"]["bound"]))
p = sweep["runs"][0]["problem"]
print(f"B={p['batch']} H={p['heads']} KV={p['kv_heads']} N=1 d={p['d']} {p['dtype']} on {sweep['gpu']['name']}\n")
table(["Nk", "FA2", "FlashDec", "speedup", "splits", "HBM floor", "floor/FlashDec"],
      [[x["Nk"], quantity(x["fa2_predicted_s"], "s"), quantity(x["fd_predicted_s"], "s"), f"{x['speedup']:.3g}x", x["splits"],
        quantity(x["kv_floor_s"], "s"), f"{x['kv_floor_s'] / x['fd_predicted_s']:.0%}"] for x in rows])
first_dram = next((x["Nk"] for x in rows if "DRAM" in x["fd_split_bound"]), 0)
first_near = next((x["Nk"] for x in rows if x["kv_floor_s"] / x["fd_predicted_s"] >= NEAR_FLOOR), 0)
where = lambda n: f"from Nk = {n:,}" if n else "nowhere in this range"
lo, hi = rows[0], rows[-1]
print(f"\nThe speedup grows from {lo['speedup']:.3g}x at Nk = {lo['Nk']:,} to {hi['speedup']:.3g}x at Nk = {hi['Nk']:,}. "
      f"FlashDecoding's split kernel is bound by DRAM bandwidth {where(first_dram)}; counting the launches and the combine, "
      f"the whole step reaches {NEAR_FLOOR:.0%} of the floor's speed {where(first_near)}. Below that, fixed costs weigh: at "
      f"Nk = {lo['Nk']:,} the step takes {quantity(lo['fd_predicted_s'] - lo['kv_floor_s'], 's')} more than its floor.")
RESULTS["context"] = dict(rows=rows, first_dram_bound_nk=first_dram, first_near_floor_nk=first_near)

import matplotlib.pyplot as plt
nk = [x["Nk"] for x in rows]
plt.plot(nk, [x["fa2_predicted_s"] * 1e6 for x in rows], "o-", label="FA2 (no split)")
plt.plot(nk, [x["fd_predicted_s"] * 1e6 for x in rows], "s-", label="FlashDecoding")
plt.plot(nk, [x["kv_floor_s"] * 1e6 for x in rows], "--", color="gray", label="K and V once at HBM bandwidth")
plt.xscale("log", base=2)
plt.yscale("log")
plt.xlabel("Nk (cached keys)")
plt.ylabel("predicted time (us)")
plt.title(f"one decode step: B={p['batch']} H={p['heads']} KV={p['kv_heads']} d={p['d']} {p['dtype']} on {sweep['gpu']['name']}",
          fontsize=9)
plt.legend()
plt.show())PY"});

        const std::string ex = "B=1, H=32 query heads sharing 8 K/V heads, N=1, Nk=65536, d=128, fp16";
        L.exercise({"kv_bytes",
                    "FlashDecoding on " + ex + ": how many bytes of K and V does it read from HBM (papers' sense)?",
                    Exercise::Kind::integer, 0, {}, "bytes",
                    [gpu] { return static_cast<double>(kv_read(simulate(flash_decoding(), exercise_problem(), gpu))); }, {},
                    "each K/V head is read once for its whole group of query heads: 2·B·KV·Nk·d·e; step 5 prints it."});
        L.exercise({"partial_bytes",
                    "The same decode step on " + gpu.name + " with the splits flash-attention's heuristic picks (step 2 "
                    "prints them): how many bytes do the partial results (O_partial and LSE_partial) move through HBM, "
                    "written by the splits and read back by the combine?",
                    Exercise::Kind::integer, 0, {}, "bytes",
                    [gpu] { return static_cast<double>(partial_bytes(simulate(flash_decoding(), exercise_problem(), gpu))); }, {},
                    "each split writes d + 1 fp32 numbers per query head (O_s and LSE_s) and the combine reads them "
                    "back: 2·S·B·H·(d + 1)·4; step 4 prints it."});
        L.exercise({"speedup",
                    "The same decode step on " + gpu.name + ": FA2's predicted time divided by FlashDecoding's "
                    "(with the heuristic's splits)?",
                    Exercise::Kind::number, 0.02, {}, "ratio FA2/FlashDecoding",
                    [gpu] {
                        const AttentionProblem q = exercise_problem();
                        return simulate(fa2(), q, gpu).time_s / simulate(flash_decoding(), q, gpu).time_s;
                    }, {},
                    "steps 1 and 2 print both predicted times; step 6 prints the ratio at every Nk."});
    });
}
