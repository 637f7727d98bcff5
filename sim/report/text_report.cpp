// The terminal report: what a student reads after `fa-sim --algo fa2 --N 4096`.
#include <algorithm>
#include <array>
#include <iomanip>
#include <optional>
#include <ostream>
#include <sstream>

#include "report/report.hpp"
#include "report/traffic_chart.hpp"
#include "report/units.hpp"

namespace fasim {

namespace {

std::string pad(const std::string& s, std::size_t w) { return s.size() >= w ? s : s + std::string(w - s.size(), ' '); }
std::string rpad(const std::string& s, std::size_t w) { return s.size() >= w ? s : std::string(w - s.size(), ' ') + s; }

// Wraps `text` at `width`, indenting continuation lines.
void wrapped(std::ostream& out, const std::string& first_prefix, const std::string& text, int width) {
    const std::string indent(first_prefix.size(), ' ');
    std::istringstream words(text);
    std::string word, line = first_prefix;
    bool empty = true;
    while (words >> word) {
        if (!empty && line.size() + 1 + word.size() > static_cast<std::size_t>(width)) {
            out << line << '\n';
            line = indent;
            empty = true;
        }
        line += (empty ? "" : " ") + word;
        empty = false;
    }
    out << line << '\n';
}

const char* dot(const ReportStyle& s) { return s.unicode ? " \u00b7 " : " - "; }

// "1 block", "2 blocks".
std::string plural(std::int64_t n, const std::string& one, const std::string& many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The HBM bytes the papers' formula counts, where the algorithm's closed form has a count of its own
// that differs from the loads and stores its program issues (Algorithm 0 reads each GEMM operand
// once; the simulated GEMMs re-read operand panels). For forward + backward: both passes' formulas,
// each pass's papers' count or, where it has none, the count of its loads and stores.
std::optional<ClosedForm::Bytes> papers_hbm(const AlgorithmResult& r) {
    auto one = [&](const Algorithm* a, const TileConfig& t, bool& separate) -> std::optional<ClosedForm::Bytes> {
        if (!a || !a->closed_form) return std::nullopt;
        const ClosedForm f = a->closed_form(r.problem, t);
        if (f.papers_hbm) {
            separate = true;
            return f.papers_hbm;
        }
        return f.hbm;
    };
    bool separate = false;
    const auto main = one(r.algo, r.tiles, separate);
    if (!main) return std::nullopt;
    ClosedForm::Bytes total = *main;
    if (r.forward) {
        const auto fwd = one(r.forward, r.forward_tiles ? *r.forward_tiles : r.tiles, separate);
        if (!fwd) return std::nullopt;
        total.read += fwd->read;
        total.write += fwd->write;
    }
    if (!separate) return std::nullopt;
    return total;
}

void gpu_lines(std::ostream& out, const GpuSpec& g, const ReportStyle& st) {
    std::string line = g.name + dot(st) + std::to_string(g.sm_count) + " SMs" + dot(st) + units::capacity(static_cast<double>(g.hbm_bytes)) +
                       " HBM at " + units::rate(g.effective_hbm_bandwidth(), "B/s") + dot(st) +
                       units::capacity(static_cast<double>(g.l2_bytes)) + " L2" + dot(st) +
                       units::capacity(static_cast<double>(g.smem_per_block_bytes)) + " shared memory per block";
    wrapped(out, "GPU      ", line, st.width);
    // Which rates are measured on a card rather than a datasheet's (docs/gpu-file.md, "measured").
    const std::string measured = g.measured_ceilings_text();
    wrapped(out, "         ", measured.empty() ? "rates: datasheet figures (no measured ceilings in this GPU's file)"
                                               : "measured ceilings used: " + measured, st.width);
}

void traffic_table(std::ostream& out, const AlgorithmResult& r) {
    out << "Memory traffic" << std::string(14, ' ') << rpad("read", 10) << rpad("write", 11) << rpad("total", 11) << '\n';
    auto row = [&](const std::string& label, double rd, double wr) {
        out << "  " << pad(label, 26) << rpad(units::bytes(rd), 10) << rpad(units::bytes(wr), 11)
            << rpad(units::bytes(rd + wr), 11) << '\n';
    };
    row("HBM (loads+stores issued)", static_cast<double>(r.hbm.read_bytes()), static_cast<double>(r.hbm.write_bytes()));
    if (const auto paper = papers_hbm(r))  // e.g. standard attention: the GEMMs re-read their operands
        row("  papers' formula", static_cast<double>(paper->read), static_cast<double>(paper->write));
    row("L2 (32-byte sectors)", static_cast<double>(r.l2.read_bytes()), static_cast<double>(r.l2.write_bytes()));
    // Requests: a 128-byte line per warp access; the L2 looks each up once, whatever its sectors.
    double requests_read = 0, requests_write = 0;
    for (const KernelRecord& k : r.kernels) {
        requests_read += static_cast<double>(k.l2_read_requests);
        requests_write += static_cast<double>(k.l2_write_requests);
    }
    out << "  " << pad("L2 requests (lines)", 26) << rpad(units::count(requests_read), 10)
        << rpad(units::count(requests_write), 11) << rpad(units::count(requests_read + requests_write), 11) << '\n';
    row("DRAM (after L2)", static_cast<double>(r.dram.read_bytes()), static_cast<double>(r.dram.write_bytes()));
    row("shared memory", static_cast<double>(r.smem_read), static_cast<double>(r.smem_write));
}

void kernel_lines(std::ostream& out, const KernelRecord& k, const KernelTiming& t, const GpuSpec& gpu, const ReportStyle& st) {
    out << "Kernel " << k.desc.name << ": " << k.desc.role << '\n';
    out << "  grid       " << plural(k.desc.grid(), "block", "blocks") << " (" << plural(k.desc.heads, "head", "heads") << " x "
        << k.desc.blocks_per_head << " per head), " << plural(k.desc.warps, "warp", "warps") << " each\n";
    out << "  occupancy  " << plural(k.occupancy.blocks_per_sm, "block/SM", "blocks/SM") << " (limited by " << k.occupancy.limiter << "), "
        << units::capacity(static_cast<double>(k.smem_bytes_per_block)) << " shared memory and " << (k.registers_given ? "" : "~")
        << k.registers_per_thread
        << " registers/thread per block" << (k.register_spill ? " (tiles exceed 255 registers: spills)" : "") << '\n';
    out << "  waves      " << units::fixed(t.waves, 2) << " (" << t.concurrent_blocks << " blocks at a time)";
    if (t.idle_sms > 0)
        out << dot(st) << t.idle_sms << " of " << gpu.sm_count << " SMs idle: only " << plural(t.grid, "block", "blocks");
    out << '\n';
    if (t.issue_s > 0) {  // mma.sync kernels: timed by the instructions their warps issue (docs/model.md)
        const double warps = t.warps_per_scheduler;  // of the blocks an SM holds at once (fewer than fit when the grid is small)
        out << "  issue      " << units::count(static_cast<double>(k.warp_instructions)) << " warp instructions; "
            << units::fixed(warps, warps == static_cast<int>(warps) ? 0 : 1) << (warps == 1 ? " warp" : " warps") << " per scheduler"
            << (k.row_blocks_per_warp > 1 ? " x " + std::to_string(k.row_blocks_per_warp) + " row blocks each" : "")
            << " issue in " << static_cast<int>(t.issue_fraction * 100 + 0.5) << "% of cycles"
            << (t.issue_law == IssueLaw::fa2_step       ? " (FA2's step timed alone: the GPU file's table)"
                : t.issue_law == IssueLaw::fa2_bwd_step ? " (the backward step timed alone: the GPU file's rate)"
                                                        : "");
        if (k.active_warps > 0 && k.active_warps < k.desc.warps)  // split-Q with few rows (docs/model.md)
            out << dot(st) << k.active_warps << " of " << k.desc.warps << " warps compute (the others copy): too few rows for every warp's 16-row fragments";
        out << '\n';
    }
}

void time_table(std::ostream& out, const AlgorithmResult& r, const ReportStyle& st) {
    std::size_t name_w = 15;  // wider for long kernel names
    for (const auto& t : r.timing) name_w = std::max(name_w, t.name.size() + 1);
    auto ms = [](double s) { return units::fixed(s * 1e3, s * 1e3 >= 10 ? 1 : 3); };
    auto cells = [&](const KernelTiming& t) {
        return std::array<std::string, 10>{ms(t.matmul_s), ms(t.nonmatmul_s), ms(t.sfu_s), ms(t.smem_s), ms(t.l2_per_sm_s),
                                           ms(t.issue_s),  ms(t.schedule_s),  ms(t.dram_s), ms(t.l2_s),   ms(t.total_s)};
    };
    // Columns of 7 (the total 8), wider where a time needs it (seconds of a long context): a space always apart.
    std::size_t w = 7;
    for (const auto& t : r.timing)
        for (const std::string& c : cells(t)) w = std::max(w, c.size() + 1);
    out << "  " << pad("kernel (ms)", name_w);
    for (const char* h : {"matmul", "non-mm", "exp", "smem", "L2/SM", "issue", "sched", "DRAM", "L2"}) out << rpad(h, w);
    out << rpad("total", w + 1) << '\n';
    const std::string indent = "  " + std::string(name_w, ' ');
    for (const auto& t : r.timing) {
        const auto c = cells(t);
        out << "  " << pad(t.name, name_w);
        for (std::size_t i = 0; i + 1 < c.size(); ++i) out << rpad(c[i], w);
        out << rpad(c.back(), w + 1) << '\n';
        out << indent << "bound: " << t.bound << '\n';
        // How the total is composed, with this kernel's numbers (the legend below says why).
        const double arith = t.overlapped_products ? std::max(t.matmul_s, t.nonmatmul_s + t.sfu_s)
                                                   : t.matmul_s + t.nonmatmul_s + t.sfu_s;
        const double compute = std::max(arith, t.issue_s);
        const double per_sm =
            std::max({std::max({compute, t.smem_s, t.l2_per_sm_s}) + t.fill_s, t.memory_latency_s, t.warp_chain_s + t.fill_s});
        std::string line = "total " + ms(t.total_s) + " = launch " + ms(t.launch_s) + " + max(sched " + ms(t.schedule_s) + ", DRAM " +
                           ms(t.dram_s) + ", L2 " + ms(t.l2_s) + "); sched: the busiest SM's max(compute " + ms(compute) + " = ";
        if (t.overlapped_products)
            line += "max(matmul, non-mm + exp): one warpgroup's products overlap another's softmax";
        else
            line += t.issue_s > arith ? "issue " + ms(t.issue_s) + ", above matmul + non-mm + exp " + ms(arith)
                                      : "matmul + non-mm + exp" + std::string(t.issue_s > 0 ? " (issue " + ms(t.issue_s) + " overlaps)" : "");
        line += ", smem " + ms(t.smem_s) + ", L2/SM " + ms(t.l2_per_sm_s);
        // Little's law, shown where it binds: DRAM bytes x latency / bytes in flight (docs/model.md).
        if (t.memory_latency_s > std::max({compute, t.smem_s, t.l2_per_sm_s}))
            line += ", DRAM latency " + ms(t.memory_latency_s) + " = its blocks' DRAM bytes x latency / bytes in flight";
        if (t.warp_chain_s > std::max({compute, t.smem_s, t.l2_per_sm_s}))
            line += ", one warp's chain " + ms(t.warp_chain_s) + " = a computing warp's instructions at one warp's issue rate";
        line += ")";
        if (t.fill_s > 0)
            line += " + fill and drain " + ms(t.fill_s) + " (one block per SM: each waits for its first tiles and stores its output alone)";
        line += " = " + ms(per_sm);
        if (per_sm > 0) line += ", x " + units::fixed(t.schedule_s / per_sm, 2) + " for whole waves (" + units::fixed(t.waves, 2) + " waves)";
        if (t.schedule_bound_s > 0)
            line += "; sched is within " + units::fixed(t.schedule_bound_s * 1e6, 2) +
                    " us of the greedy schedule's (the blocks past the scheduler's budget spread evenly over the slots)";
        wrapped(out, indent, line, st.width);
    }
    wrapped(out, "  ",
            "Legend: matmul, non-mm (FP32 non-matmul) and exp (SFU) are the busiest SM's arithmetic; they add, since the "
            "same warps issue them in turn. issue: mma.sync kernels' warp instructions at their latency-bound issue rate; "
            "the larger of it and that sum is compute. smem and L2/SM are that SM's shared-memory and L2 traffic; they "
            "overlap compute, so the slowest of the three sets the SM's time. sched is the schedule's makespan: that time "
            "over whole waves of blocks (a partial last wave costs a whole one). DRAM and L2 are the chip's bandwidth "
            "bounds; they overlap the schedule. total = launch + max(sched, DRAM, L2). A block alone on its SM also "
            "waits for its first tiles (DRAM latency and their transfer) and stores its output with nothing else to do: "
            "its fill and drain add to its time.",
            st.width);
}

}  // namespace

void print_report(std::ostream& out, const AlgorithmResult& r, const GpuSpec& gpu, const ReportStyle& st) {
    const AttentionProblem& p = r.problem;
    out << "fa-sim" << dot(st) << (r.forward ? std::string(r.forward->title) + ", then its backward" : std::string(r.algo->title))
        << "\n\n";
    gpu_lines(out, gpu, st);
    out << "Problem  " << p.describe() << "\n";
    if (r.pass != PassSelection::fwd)
        out << "Pass     " << (r.pass == PassSelection::bwd ? "backward: dQ, dK, dV from dO and what the forward kept"
                                                             : "forward, then backward (training)")
            << "\n";
    out << '\n';

    auto tiles = [&](const char* prefix, const TileConfig& t) {
        out << prefix << "Br=" << t.Br << ", Bc=" << t.Bc << (t.q_splits > 1 ? ", q_splits=" + std::to_string(t.q_splits) : "")
            << dot(st) << units::capacity(static_cast<double>(t.smem_bytes)) << " shared memory per block\n";
        for (const auto& why : t.reasons) wrapped(out, "         ", why, st.width);
    };
    if (r.forward_tiles) {
        tiles("Tiles    forward: ", *r.forward_tiles);
        tiles("         backward: ", r.tiles);
    } else {
        tiles("Tiles    ", r.tiles);
    }
    out << '\n';

    for (std::size_t i = 0; i < r.kernels.size(); ++i) kernel_lines(out, r.kernels[i], r.timing[i], gpu, st);
    out << '\n';

    traffic_table(out, r);
    out << '\n';
    print_traffic_chart(out, r, st);
    if (!r.fits_in_hbm)
        out << "  Warning: the tensors need " << units::capacity(static_cast<double>(r.global_bytes)) << ", more than the "
            << units::capacity(static_cast<double>(gpu.hbm_bytes)) << " of HBM: this run could not happen on " << gpu.name << ".\n";
    out << '\n';

    if (r.pass != PassSelection::fwd)
        out << "Memory   " << units::capacity(static_cast<double>(r.held_between_passes_bytes))
            << " kept from the forward for the backward besides O; " << units::capacity(static_cast<double>(r.global_bytes))
            << " of global tensors in all\n\n";

    out << "Work\n";
    out << "  matmul FLOPs      " << units::flops(static_cast<double>(r.matmul_flops));
    const Count unit = Count(p.batch_heads()) * p.N * p.Nk * p.d;  // B*H*N*Nk*d: 2^72 at the limits
    if (p.causal)
        out << " (causal ideal " << units::flops(static_cast<double>(r.ideal_matmul_flops)) << "; whole tiles are computed)";
    else if (r.matmul_flops % unit == 0)
        out << " (= " << r.matmul_flops / unit << "*B*H*N*Nk*d)";
    out << '\n';
    if (r.recomputed_matmul_flops > 0)
        out << "    recomputed      " << units::flops(static_cast<double>(r.recomputed_matmul_flops))
            << (r.tiles.dq == DqMode::separate ? " (S = Q K^T again: the backward keeps no P; S and dP once more in the dQ kernel)\n"
                                               : " (S = Q K^T again: the backward keeps no P)\n");
    out << "  non-matmul FLOPs  " << units::flops(static_cast<double>(r.nonmatmul_flops)) << " (of which exp/log "
        << units::count(static_cast<double>(r.sfu_ops)) << " on the SFUs)\n";
    const double ridge = gpu.matmul_flops(p.dtype) / gpu.effective_hbm_bandwidth();
    out << "  intensity         " << units::fixed(r.arithmetic_intensity(), 1) << " FLOP per HBM byte (ridge point of "
        << gpu.name << " at " << dtype_name(p.dtype) << ": " << units::fixed(ridge, 0) << ")\n\n";

    out << "Predicted time      " << units::seconds(r.time_s) << dot(st)
        << units::rate(r.achieved_flops(), "FLOP/s") << " of matmul" << dot(st) << "bound by " << r.longest_kernel().bound
        << '\n';
    time_table(out, r, st);
}

void print_comparison(std::ostream& out, const std::vector<AlgorithmResult>& rs, const GpuSpec& gpu, const ReportStyle& st) {
    if (rs.empty()) return;
    const AttentionProblem& p = rs.front().problem;
    std::string names;
    for (const auto& r : rs) names += (names.empty() ? "" : " vs ") + std::string((r.forward ? r.forward : r.algo)->name);
    if (rs.front().pass == PassSelection::fwd_bwd) names += ", forward and backward";
    out << "fa-sim" << dot(st) << names << "\n\n";
    gpu_lines(out, gpu, st);
    out << "Problem  " << p.describe() << "\n\n";
    const AlgorithmResult* standard = nullptr;
    for (const auto& r : rs)
        if (r.algo->baseline) standard = &r;

    std::size_t name_w = 8;  // the longest algorithm id
    for (const auto& r : rs) name_w = std::max(name_w, family_of(*r.algo).size());
    const std::size_t label_w = 22, col_w = std::max<std::size_t>(13, name_w + 2);
    auto header = [&] {
        out << pad("", label_w);
        for (const auto& r : rs) out << rpad(std::string(family_of(*r.algo)), col_w);
        out << '\n';
    };
    auto row = [&](const std::string& label, auto&& cell) {
        out << pad(label, label_w);
        for (const auto& r : rs) out << rpad(cell(r), col_w);
        out << '\n';
    };
    auto vs_standard = [&](const std::string& label, auto&& value) {
        if (!standard) return;
        row(label + std::string(family_of(*standard->algo)), [&](const AlgorithmResult& r) { return units::ratio(value(r) / value(*standard)); });
    };
    header();
    row("tiles Br x Bc", [](const AlgorithmResult& r) {
        return std::to_string(r.tiles.Br) + "x" + std::to_string(r.tiles.Bc) +
               (r.tiles.q_splits > 1 ? ", q_splits=" + std::to_string(r.tiles.q_splits) : "");
    });
    if (std::any_of(rs.begin(), rs.end(), [](const AlgorithmResult& r) { return r.algo->dq_modes; }))  // --dq
        row("dQ summed", [](const AlgorithmResult& r) { return r.algo->dq_modes ? std::string(dq_name(r.tiles.dq)) : std::string("-"); });
    row("HBM loads+stores", [](const AlgorithmResult& r) { return units::bytes(static_cast<double>(r.hbm.total())); });
    vs_standard("  vs ", [](const AlgorithmResult& r) { return static_cast<double>(r.hbm.total()); });
    // The papers' formula where an algorithm's closed form has one apart from its loads and stores.
    bool any_paper = false;
    for (const auto& r : rs) any_paper |= papers_hbm(r).has_value();
    if (any_paper)
        row("  papers' formula", [](const AlgorithmResult& r) {
            const auto paper = papers_hbm(r);
            return paper ? units::bytes(static_cast<double>(paper->total())) : std::string("same");
        });
    row("L2 (32-byte sectors)", [](const AlgorithmResult& r) { return units::bytes(static_cast<double>(r.l2.total())); });
    row("DRAM read+write", [](const AlgorithmResult& r) { return units::bytes(static_cast<double>(r.dram.total())); });
    vs_standard("  vs ", [](const AlgorithmResult& r) { return static_cast<double>(r.dram.total()); });
    row("shared memory", [](const AlgorithmResult& r) { return units::bytes(static_cast<double>(r.smem_read + r.smem_write)); });
    row("matmul FLOPs", [](const AlgorithmResult& r) { return units::flops(static_cast<double>(r.matmul_flops)); });
    row("non-matmul FLOPs", [](const AlgorithmResult& r) { return units::flops(static_cast<double>(r.nonmatmul_flops)); });
    row("kernels", [](const AlgorithmResult& r) { return std::to_string(r.kernels.size()); });
    row("largest grid", [](const AlgorithmResult& r) {
        std::int64_t g = 0;
        for (const auto& k : r.kernels) g = std::max(g, k.desc.grid());
        return std::to_string(g);
    });
    row("idle SMs (main kernel)", [](const AlgorithmResult& r) { return std::to_string(r.longest_kernel().idle_sms); });
    row("predicted time", [](const AlgorithmResult& r) { return units::seconds(r.time_s); });
    vs_standard("  speedup vs ", [](const AlgorithmResult& r) { return 1.0 / r.time_s; });
    out << "\nWhat bounds each (its longest kernel):\n";
    for (const auto& r : rs) out << "  " << pad(std::string(family_of(*r.algo)), name_w + 2) << r.longest_kernel().name << ": " << r.longest_kernel().bound << '\n';
    for (const auto& r : rs)
        if (!r.fits_in_hbm)
            out << "Warning: " << std::string(family_of(*r.algo)) << " needs " << units::capacity(static_cast<double>(r.global_bytes))
                << " of global memory, more than " << gpu.name << "'s " << units::capacity(static_cast<double>(gpu.hbm_bytes)) << ".\n";
}

void print_sweep(std::ostream& out, const std::vector<std::vector<AlgorithmResult>>& by_n, const GpuSpec& gpu,
                 const ReportStyle& st, SweepParameter parameter) {
    if (by_n.empty() || by_n.front().empty()) return;
    const AttentionProblem& p = by_n.front().front().problem;
    const std::string name = sweep_parameter_name(parameter);
    out << "fa-sim" << dot(st) << "sweep over " << name << dot(st) << gpu.name << dot(st) << "B=" << p.batch << " H=" << p.heads
        << (p.grouped() ? " KV=" + std::to_string(p.kv_head_count()) : std::string())
        << (parameter == SweepParameter::Nk ? " N=" + std::to_string(p.N) : std::string()) << " d=" << p.d << " "
        << dtype_name(p.dtype) << (p.causal ? " causal" : " non-causal") << "\n\n";
    std::size_t col = 12;  // wide enough for the longest algorithm id and a space
    for (const auto& r : by_n.front()) col = std::max(col, family_of(*r.algo).size() + 2);
    auto table = [&](const std::string& title, auto&& cell) {
        out << title << '\n' << rpad(name, 8);
        for (const auto& r : by_n.front()) out << rpad(std::string(family_of(*r.algo)), col);
        out << '\n';
        for (const auto& rs : by_n) {
            out << rpad(std::to_string(sweep_value(rs.front().problem, parameter)), 8);
            for (const auto& r : rs) out << rpad(cell(r) + (r.fits_in_hbm ? "" : "*"), col);
            out << '\n';
        }
        out << '\n';
    };
    table("HBM traffic, every load and store issued (read+write)", [](const AlgorithmResult& r) { return units::bytes(static_cast<double>(r.hbm.total())); });
    table("DRAM traffic after L2 (read+write)", [](const AlgorithmResult& r) { return units::bytes(static_cast<double>(r.dram.total())); });
    table("Predicted time", [](const AlgorithmResult& r) { return units::seconds(r.time_s); });
    bool any = false;
    for (const auto& rs : by_n)
        for (const auto& r : rs) any |= !r.fits_in_hbm;
    if (any) out << "* the tensors exceed " << gpu.name << "'s " << units::capacity(static_cast<double>(gpu.hbm_bytes)) << " of HBM\n";
}

}  // namespace fasim
