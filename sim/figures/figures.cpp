// The charts. Every number in a title, label or caption comes from the request or
// from the simulator's results.
#include "figures/figures.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/errors.hpp"
#include "figures/progress.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/kernel_setup.hpp"
#include "plot/atomic_write.hpp"
#include "plot/png_convert.hpp"

namespace fasim::figures {

namespace {

using plot::Chart;
using plot::LineSeries;
using plot::LineStyle;
using plot::Marker;
using plot::ScaleKind;
using plot::ScatterSeries;

const std::string kTimes = "\u00D7";  // ×
const std::string kDot = "\u00B7";    // ·

double dbl(std::int64_t v) { return static_cast<double>(v); }
double dbl(Count v) { return to_double(v); }

// A tensor's name as the figures write it (the papers' ℓ for l).
std::string display_name(const std::string& tensor) { return tensor == "l" ? "\u2113" : tensor; }

std::string algo_label(const Algorithm* a) { return std::string(a->label); }

// One colour per algorithm in every figure, by its place in the registry (Okabe-Ito: blue, orange,
// green, vermillion, ...).
std::string algo_color(const Algorithm* a) {
    const std::vector<const Algorithm*> forward = algorithms(Pass::forward);  // a backward pass: its forward's colour
    std::size_t i = 0;
    while (i < forward.size() && forward[i]->id != family_of(*a)) ++i;
    return plot::palette_color(i);
}

// "fa1 or fa2": the requested algorithms a figure needs (those with the property).
std::string ids_where(bool (*has)(const Algorithm&)) {
    std::vector<std::string> ids;
    for (const Algorithm* a : algorithms())
        if (has(*a)) ids.push_back(std::string(a->id));
    std::string s;
    for (std::size_t i = 0; i < ids.size(); ++i) s += (i == 0 ? "" : i + 1 == ids.size() ? " or " : ", ") + ids[i];
    return s;
}

// How a block-size sweep varies an algorithm's tiles, as captions say it.
std::string swept(const Algorithm* a) { return a->tile_sweep == TileSweep::bc_only ? "Bc=" : "Br=Bc="; }

std::string tiles_text(const AlgorithmResult& r) {
    const TileConfig& t = r.tiles;
    if (!r.algo->tunable_tiles) {
        if (t.matmul == MatmulMode::naive)
            return "standard naive GEMM " + std::to_string(t.gemm_m) + kTimes + std::to_string(t.gemm_n);
        return "standard GEMM " + std::to_string(t.gemm_m) + kTimes + std::to_string(t.gemm_n);
    }
    return algo_label(r.algo) + " " + std::to_string(t.Br) + kTimes + std::to_string(t.Bc);
}

// "B=1, H=16, N=4096, d=64, fp16, non-causal" (N left out for sweeps over N).
std::string problem_text(const AttentionProblem& p, bool with_n) {
    std::string s = "B=" + std::to_string(p.batch) + ", H=" + std::to_string(p.heads);
    if (with_n) {
        s += ", N=" + std::to_string(p.N);
        if (p.Nk != p.N) s += ", Nk=" + std::to_string(p.Nk);
    } else if (p.Nk != p.N) {
        s += ", Nk=" + std::to_string(p.Nk) + " fixed";
    }
    s += ", d=" + std::to_string(p.d) + ", " + dtype_name(p.dtype) + (p.causal ? ", causal" : ", non-causal");
    return s;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
    std::string s;
    for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
    return s;
}

// "Configuration: A100-SXM4-40GB; B=1, H=16, N=4096, d=64, fp16, non-causal; tiles (Br×Bc): ..."
std::string config_text(const FigureRequest& req, const AttentionProblem& p, bool with_n,
                        const std::vector<const AlgorithmResult*>& results) {
    std::string s = "Configuration: " + req.gpu.name + "; " + problem_text(p, with_n);
    std::vector<std::string> tiles;
    for (const AlgorithmResult* r : results) tiles.push_back(tiles_text(*r));
    if (!tiles.empty()) s += "; tiles (Br" + kTimes + "Bc): " + join(tiles, ", ");
    if (!req.model.tensor_cores) s += "; matrix products on the CUDA cores (no tensor cores)";
    return s + ".";
}

std::string sig(double v, int digits = 4) { return plot::format_plain(v, digits); }

// 0.790123 -> "79%", 0.0772 -> "7.7%", 0.0004 -> "0.04%".
std::string pct(double fraction) {
    const double p = fraction * 100;
    return plot::format_plain(p, std::fabs(p) >= 100 ? 3 : 2) + "%";
}

std::size_t add_line(Figure& f, LineSeries s, bool reference = false) {
    f.series.push_back({s.name, s.x, s.y, reference});
    return f.chart.add_line(std::move(s));
}

std::size_t add_scatter(Figure& f, ScatterSeries s) {
    f.series.push_back({s.name, s.x, s.y, false});
    return f.chart.add_scatter(std::move(s));
}

double matmul_peak(const FigureRequest& req) {
    return req.model.tensor_cores ? req.gpu.matmul_flops(req.problem.dtype) : req.gpu.effective_fp32_flops();
}

std::string matmul_peak_text(const FigureRequest& req) {
    const DType t = req.problem.dtype;
    if (!req.model.tensor_cores || t == DType::fp32) return "FP32 CUDA cores";
    return std::string(dtype_name(t)) + " tensor cores";
}

// " (backward)", " (forward + backward)": what a training figure's title adds.
std::string pass_title(PassSelection pass) {
    return pass == PassSelection::bwd ? " (backward)" : pass == PassSelection::fwd_bwd ? " (forward + backward)" : "";
}

// The leading-order closed form of the programs a result ran (both passes' terms for fwd+bwd), and how
// the caption writes it; nullopt when one of them has none.
std::optional<std::pair<double, std::string>> leading_form(const AlgorithmResult& r) {
    const ClosedForm b = r.algo->closed_form(r.problem, r.tiles);
    if (!b.leading_hbm_bytes) return std::nullopt;
    if (!r.forward) return std::pair{*b.leading_hbm_bytes, b.leading_text};
    const ClosedForm f = r.forward->closed_form(r.problem, *r.forward_tiles);
    if (!f.leading_hbm_bytes) return std::nullopt;
    return std::pair{*f.leading_hbm_bytes + *b.leading_hbm_bytes, f.leading_text + " + " + b.leading_text};
}

}  // namespace

std::string pass_suffix(PassSelection pass) {
    return pass == PassSelection::bwd ? "_bwd" : pass == PassSelection::fwd_bwd ? "_fwd_bwd" : "";
}

// ---- 1. traffic vs N ---------------------------------------------------------------

Figure traffic_vs_n(const FigureRequest& req, const NSweep& sweep) {
    Figure f{"traffic_vs_n" + pass_suffix(req.pass),
             Chart("Memory traffic vs sequence length" + pass_title(req.pass) + ": HBM requested and DRAM after L2", 980, 640),
             {}, {}, {}, {}};
    // Each tensor once: the forward reads Q, K, V and writes O; the backward reads Q, K, V, O, dO and
    // writes dQ, dK, dV (2(N + Nk)·d and 4(N + Nk)·d elements).
    const std::int64_t once = req.pass == PassSelection::fwd ? 2 : req.pass == PassSelection::bwd ? 4 : 6;
    Chart& c = f.chart;
    c.x_axis() = {ScaleKind::Log2, "sequence length N (tokens)", plot::tokens_labels()};
    c.y_axis() = {ScaleKind::Log10, "bytes read + written, all B" + kDot + "H heads", plot::si_labels("B")};
    c.set_legend(plot::LegendPosition::OutsideRight);

    std::vector<double> xs, compulsory;
    for (std::int64_t n : sweep.n) {
        xs.push_back(dbl(n));
        const AttentionProblem p = problem_at(req.problem, n);
        compulsory.push_back(dbl(p.batch_heads() * p.elem_bytes() * once * (p.N + p.Nk) * p.d));
    }
    // Drawn first, so the simulated lines lie on top of it.
    add_line(f,
             LineSeries(req.pass == PassSelection::fwd ? "compulsory (Q, K, V, O once)" : "compulsory (each tensor once)", xs,
                        compulsory)
                 .with_color("#888888")
                 .with_marker(Marker::None)
                 .with_style(LineStyle::Dotted)
                 .with_width(1.4),
             true);
    std::vector<std::string> formulas;
    std::vector<const AlgorithmResult*> first;
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        const Algorithm* algo = sweep.algos[a];
        const auto& row = sweep.by_algo[a];
        if (row.empty()) continue;
        first.push_back(&row.front());
        std::vector<double> x, hbm, dram, closed;  // the N this algorithm was simulated at
        for (const AlgorithmResult& r : row) {
            x.push_back(dbl(r.problem.N));
            hbm.push_back(dbl(r.hbm.total()));
            dram.push_back(dbl(r.dram.total()));
            if (auto v = leading_form(r)) closed.push_back(v->first);
        }
        const std::string color = algo_color(algo);
        add_line(f, LineSeries(algo_label(algo) + " HBM", x, hbm).with_color(color).with_marker(Marker::Circle));
        add_line(f, LineSeries(algo_label(algo) + " DRAM", x, dram)
                        .with_color(color)
                        .with_marker(Marker::Square)
                        .with_style(LineStyle::Dotted));
        if (closed.size() == x.size()) {
            add_line(f,
                     LineSeries(algo_label(algo) + " closed form", x, closed)
                         .with_color(color)
                         .with_marker(Marker::None)
                         .with_style(LineStyle::Dashed)
                         .with_width(1.4),
                     true);
            formulas.push_back(leading_form(row.front())->second);
        }
    }

    std::string caption = config_text(req, req.problem, false, first) + "\n";
    caption += "Solid (circles): HBM traffic as the algorithm requests it, the papers' count. Dotted (squares): DRAM "
               "bytes after the simulator's L2 model, what a DRAM counter reads; lines that coincide lie on top of each "
               "other. Grey dotted: compulsory traffic, " +
               (req.pass == PassSelection::fwd ? std::string("Q, K and V read and O written once, 2")
                : req.pass == PassSelection::bwd ? "Q, K, V, O and dO read and dQ, dK and dV written once, 4"
                                                 : "each tensor of both passes read or written once, 6") +
               kDot + "(N + Nk)" + kDot + "d" + kDot + "e" + kDot + "B" + kDot + "H.";
    if (!formulas.empty())
        caption += " Dashed: leading-order closed forms, e = " + std::to_string(req.problem.elem_bytes()) +
                   " bytes per element: " + join(formulas, "; ") + ".";
    std::vector<std::string> left_out;
    for (std::size_t a = 0; a < sweep.algos.size() && a < sweep.over_budget.size(); ++a) {
        if (sweep.over_budget[a].empty()) continue;
        std::vector<std::string> n;
        for (std::int64_t v : sweep.over_budget[a]) n.push_back(std::to_string(v));
        left_out.push_back(algo_label(sweep.algos[a]) + " at N=" + join(n, ", "));
    }
    if (!left_out.empty()) {
        caption += " Left out, each would take the simulator more than a few seconds (fa-sim simulates any single one): " +
                   join(left_out, "; ") + ".";
        f.notes.push_back("left out " + join(left_out, "; ") + " (over the figures' work budget)");
    }
    const auto limit = standard_hbm_limit_n(sweep, req.gpu);
    bool has_standard = false;
    const AlgorithmResult* std_last = nullptr;
    for (std::size_t a = 0; a < sweep.algos.size(); ++a)
        if (sweep.algos[a]->baseline && !sweep.by_algo[a].empty()) {
            has_standard = true;
            std_last = &sweep.by_algo[a].back();
        }
    const std::string cap = plot::format_binary(dbl(req.gpu.hbm_bytes), "B");
    if (limit) {
        c.add_vertical_marker(plot::VerticalMarker(
            *limit, "standard attention's tensors exceed " + cap + " of HBM (N \u2248 " + plot::format_tokens(*limit, 3) + ")"));
        caption += "\nVertical line: from N \u2248 " + std::to_string(std::llround(*limit)) + " (interpolated between sweep points) standard "
                   "attention's global tensors S, P, Q, K, V and O no longer fit in the " + req.gpu.name + "'s " + cap +
                   " of HBM (at N=" + std::to_string(std_last->problem.N) + " they need " +
                   plot::format_binary(dbl(std_last->global_bytes), "B") +
                   "); right of it its points show what it would move, not a run that is possible.";
    } else if (has_standard && std_last) {
        caption += std_last->fits_in_hbm ? "\nStandard attention's tensors fit in the " + cap + " of HBM at every N shown."
                                         : "\nStandard attention's tensors exceed the " + cap + " of HBM at every N shown.";
    }
    c.set_caption(caption);
    return f;
}

// ---- 2. bytes per tensor -----------------------------------------------------------

Figure tensor_bars(const FigureRequest& req, const std::vector<AlgorithmResult>& at_n) {
    Figure f{"tensor_bars" + pass_suffix(req.pass),
             Chart("Traffic per tensor at N=" + std::to_string(req.problem.N) + pass_title(req.pass) +
                       ": HBM requested and DRAM after L2", 900, 580),
             {}, {}, {}, {}};
    Chart& c = f.chart;
    c.y_axis() = {ScaleKind::Linear, "bytes read + written, all B" + kDot + "H heads", plot::si_labels("B")};
    c.x_axis() = {ScaleKind::Linear, "algorithm and memory level"};
    c.set_legend(plot::LegendPosition::OutsideRight);
    // Q, K, V, O in the blue/green family of the palette, S and P warm, statistics grey/yellow; the
    // stacks in this order, then any other tensor in the order the programs declare them.
    static const std::vector<std::pair<std::string, std::string>> familiar = {
        {"Q", "#0072B2"}, {"K", "#56B4E9"}, {"V", "#009E73"}, {"O", "#D55E00"}, {"O_acc", "#F4A582"},
        {"S", "#CC79A7"}, {"P", "#E69F00"}, {"m", "#9A9A9A"}, {"l", "#5A5A5A"}, {"LSE", "#F0E442"}};
    std::vector<std::string> names;
    for (const auto& [name, color] : familiar) names.push_back(name);
    for (const AlgorithmResult& r : at_n)
        for (const TensorBytes& t : r.hbm.tensors)
            if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
    auto color_of = [&](const std::string& name) {
        for (const auto& [n, color] : familiar)
            if (n == name) return color;
        const auto position = std::find(names.begin(), names.end(), name) - names.begin();
        return plot::palette_color(static_cast<std::size_t>(position));
    };

    plot::StackedBars& b = f.bars;
    std::vector<const AlgorithmResult*> rs;
    for (const AlgorithmResult& r : at_n) {
        rs.push_back(&r);
        b.categories.push_back(algo_label(r.algo) + " HBM");
        b.categories.push_back(algo_label(r.algo) + " DRAM");
    }
    for (const std::string& t : names) {
        std::vector<double> v;
        bool any = false;
        for (const AlgorithmResult& r : at_n) {
            const Count hbm = read_of(r.hbm, t) + write_of(r.hbm, t), dram = read_of(r.dram, t) + write_of(r.dram, t);
            any = any || hbm > 0 || dram > 0;
            v.push_back(dbl(hbm));
            v.push_back(dbl(dram));
        }
        if (!any) continue;
        b.stacks.push_back(display_name(t));
        b.values.push_back(std::move(v));
        b.colors.push_back(color_of(t));
    }
    c.set_stacked_bars(b);

    std::string caption = config_text(req, req.problem, true, rs) + "\n";
    caption += "Two bars per algorithm: HBM = the global loads and stores the algorithm issues (the papers' count); "
               "DRAM = what reaches DRAM after the L2 model (re-reads served by L2 disappear). Stacks: one per tensor "
               "(read + written), totals above the bars (bars too thin to see at this scale still have their total).";
    std::vector<std::string> top;
    for (const AlgorithmResult& r : at_n) {
        Count most = 0;
        for (const TensorBytes& t : r.hbm.tensors) most = std::max(most, t.total());
        if (most == 0 || r.hbm.total() == 0) continue;
        std::vector<std::string> largest;  // the largest, and any within 1% of it (S and P tie in standard)
        for (const std::string& t : names)
            if (const TensorBytes* bytes = r.hbm.find(t); bytes && dbl(bytes->total()) >= 0.99 * dbl(most))
                largest.push_back(display_name(t));
        top.push_back(algo_label(r.algo) + " " + join(largest, " and ") + " (" + pct(dbl(most) / dbl(r.hbm.total())) +
                      (largest.size() > 1 ? " each)" : ")"));
    }
    if (!top.empty()) caption += " Largest tensors in HBM traffic: " + join(top, ", ") + ".";
    c.set_caption(caption);
    return f;
}

// ---- 3. roofline -------------------------------------------------------------------

Figure roofline(const FigureRequest& req, const std::vector<AlgorithmResult>& at_n) {
    const double peak = matmul_peak(req);
    const double bw = req.gpu.effective_hbm_bandwidth();
    const double ridge = peak / bw;
    Figure f{"roofline",
             Chart("Roofline of the " + req.gpu.name + " (" + matmul_peak_text(req) + "), N=" + std::to_string(req.problem.N),
                   900, 620),
             {}, {}, {}, {}};
    Chart& c = f.chart;
    c.x_axis() = {ScaleKind::Log10, "arithmetic intensity (FLOP per byte)", plot::plain_labels()};
    c.y_axis() = {ScaleKind::Log10, "matmul FLOP/s (predicted)", plot::si_labels("FLOP/s")};
    c.set_legend(plot::LegendPosition::OutsideRight);

    struct Pt {
        const Algorithm* algo;
        double hbm_i, dram_i, y;
    };
    std::vector<Pt> pts;
    double lo = ridge, hi = ridge;
    std::vector<const AlgorithmResult*> rs;
    for (const AlgorithmResult& r : at_n) {
        rs.push_back(&r);
        const double flops = dbl(r.matmul_flops + r.nonmatmul_flops);
        const double hbm_i = r.arithmetic_intensity();
        const double dram_i = r.dram.total() > 0 ? flops / dbl(r.dram.total()) : 0;
        const double y = r.achieved_flops();
        if (!(hbm_i > 0) || !(y > 0)) continue;
        pts.push_back({r.algo, hbm_i, dram_i, y});
        lo = std::min(lo, hbm_i);
        hi = std::max(hi, std::max(hbm_i, dram_i));
    }
    lo /= 3;
    hi *= 3;
    add_line(f,
             LineSeries("roofline", {lo, ridge, hi}, {bw * lo, peak, peak})
                 .with_color("#333333")
                 .with_marker(Marker::None)
                 .with_width(2.2),
             true);
    for (const Pt& p : pts)
        add_scatter(f, ScatterSeries(algo_label(p.algo) + ", HBM bytes", {p.hbm_i}, {p.y})
                           .with_color(algo_color(p.algo))
                           .with_marker(Marker::Circle)
                           .with_size(6));
    for (const Pt& p : pts)
        if (p.dram_i > 0)
            add_scatter(f, ScatterSeries(algo_label(p.algo) + ", DRAM bytes", {p.dram_i}, {p.y})
                               .with_color(algo_color(p.algo))
                               .with_marker(Marker::Diamond)
                               .with_size(6));

    const bool measured_bw = req.gpu.measured.hbm_bandwidth > 0;
    std::string caption = config_text(req, req.problem, true, rs) + "\n";
    caption += "Roof: min(" + plot::format_si(peak, "FLOP/s") + " " + matmul_peak_text(req) + ", " +
               plot::format_si(bw, "B/s") + (measured_bw ? " measured" : " datasheet") + " HBM bandwidth " + kTimes +
               " intensity); ridge at " + sig(ridge, 3) + " FLOP/B. Circles: intensity = (matmul + non-matmul FLOPs) / HBM "
               "bytes the algorithm requests (the papers' sense). Diamonds: the same FLOPs / DRAM bytes after L2, the "
               "intensity the DRAM sees. Height: predicted matmul FLOP/s = matmul FLOPs / predicted time.";
    std::vector<std::string> summary;
    for (const Pt& p : pts)
        summary.push_back(algo_label(p.algo) + " " + sig(p.hbm_i, 3) + " FLOP/B, " + plot::format_si(p.y, "FLOP/s") + " (" +
                          pct(p.y / peak) + " of peak)");
    if (!summary.empty()) caption += " " + join(summary, "; ") + ".";
    std::vector<std::string> above;
    for (const Pt& p : pts)
        if (p.y > 1.02 * std::min(peak, bw * p.hbm_i)) above.push_back(algo_label(p.algo));
    if (!above.empty())
        caption += " Circles above the roof (" + join(above, ", ") +
                   "): L2 serves part of the traffic requested, so DRAM moves fewer bytes than the papers' count and "
                   "the diamond is the point the roof applies to.";
    c.set_caption(caption);
    return f;
}

// ---- 4. block size -----------------------------------------------------------------

std::vector<Figure> block_size_sweep(const FigureRequest& req, const BlockSizeSweep& sweep) {
    std::vector<Figure> out;
    bool any = false;
    for (const auto& p : sweep.points) any = any || !p.empty();
    if (!any) return out;

    std::vector<std::string> what, skipped, over, defaults, axis_parts;
    std::vector<const AlgorithmResult*> rs;
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        const Algorithm* algo = sweep.algos[a];
        what.push_back(algo->tile_sweep == TileSweep::bc_only
                           ? algo_label(algo) + " varies Bc with Br=" + std::to_string(sweep.fixed_br[a]) + " fixed"
                           : algo_label(algo) + " uses square tiles Br = Bc");
        axis_parts.push_back(algo_label(algo) + (algo->tile_sweep == TileSweep::bc_only ? ": Bc" : ": Br = Bc"));
        if (!sweep.skipped[a].empty()) {
            std::vector<std::string> s;
            for (std::int64_t b : sweep.skipped[a]) s.push_back(std::to_string(b));
            skipped.push_back(algo_label(algo) + " " + swept(algo) + join(s, ", "));
        }
        if (a < sweep.over_budget.size() && !sweep.over_budget[a].empty()) {
            std::vector<std::string> s;
            for (std::int64_t b : sweep.over_budget[a]) s.push_back(std::to_string(b));
            over.push_back(algo_label(algo) + " " + swept(algo) + join(s, ", "));
        }
        const TileConfig def = choose_tiles(*algo, req.problem, req.gpu, TileRequest{std::nullopt, std::nullopt, req.tiles.matmul});
        defaults.push_back(algo_label(algo) + " " + std::to_string(def.Br) + kTimes + std::to_string(def.Bc));
    }
    std::string caption_tail = "As in the FlashAttention paper (Dao et al. 2022, Fig. 2 middle): " + join(what, "; ") +
                               ". Larger blocks mean fewer passes over K and V (FA1: fewer reads and writes of O, m, \u2113), "
                               "so less HBM traffic; runtime stops improving once something else limits the kernel.";
    if (!skipped.empty())
        caption_tail += " Left out, they do not fit in the " + plot::format_binary(dbl(req.gpu.smem_per_block_bytes), "B") +
                        " of shared memory per block: " + join(skipped, "; ") + ".";
    if (!over.empty())
        caption_tail += " Left out, each would take the simulator more than a few seconds: " + join(over, "; ") + ".";
    caption_tail += " Paper defaults (Br" + kTimes + "Bc): " + join(defaults, ", ") + ".";

    for (int which = 0; which < 2; ++which) {
        const bool traffic = which == 0;
        Figure f{traffic ? "block_size_sweep_hbm" : "block_size_sweep_time",
                 Chart(std::string(traffic ? "HBM traffic" : "Predicted runtime") + " vs block size, N=" +
                           std::to_string(req.problem.N),
                       820, 560),
                 {}, {}, {}, {}};
        Chart& c = f.chart;
        c.x_axis() = {ScaleKind::Log2, "block size (" + join(axis_parts, "; ") + ")", plot::plain_labels()};
        if (traffic) c.y_axis() = {ScaleKind::Log10, "HBM bytes read + written", plot::si_labels("B")};
        else c.y_axis() = {ScaleKind::Log10, "predicted kernel time", plot::seconds_labels()};
        std::vector<std::string> bounds;
        for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
            const auto& pts = sweep.points[a];
            if (pts.empty()) continue;
            std::vector<double> x, y;
            for (const BlockSizePoint& p : pts) {
                x.push_back(dbl(p.block));
                y.push_back(traffic ? dbl(p.result.hbm.total()) : p.result.time_s);
            }
            const Algorithm* algo = sweep.algos[a];
            const bool bc_only = algo->tile_sweep == TileSweep::bc_only;
            const std::string name = algo_label(algo) + (bc_only ? " (Bc; Br=" + std::to_string(sweep.fixed_br[a]) + ")" : " (Br = Bc)");
            add_line(f, LineSeries(name, x, y).with_color(algo_color(algo)).with_marker(bc_only ? Marker::Circle : Marker::Square));
            if (rs.size() < sweep.algos.size()) rs.push_back(&pts.back().result);
            const auto& best = *std::min_element(pts.begin(), pts.end(), [](const BlockSizePoint& l, const BlockSizePoint& r) {
                return l.result.time_s < r.result.time_s;
            });
            bounds.push_back(algo_label(algo) + " is fastest at " + swept(algo) +
                             std::to_string(best.block) + ", " + plot::format_seconds(best.result.time_s, 3) +
                             ", bound by " + best.result.longest_kernel().bound);
        }
        std::string caption = "Configuration: " + req.gpu.name + "; " + problem_text(req.problem, true) +
                               (req.model.tensor_cores ? "" : "; matrix products on the CUDA cores") + ".\n" + caption_tail;
        if (!traffic && !bounds.empty()) caption += " " + join(bounds, "; ") + ".";
        c.set_caption(caption);
        if (traffic && !skipped.empty()) f.notes.push_back("left out block sizes that do not fit in shared memory: " + join(skipped, "; "));
        if (traffic && !over.empty()) f.notes.push_back("left out block sizes over the figures' work budget: " + join(over, "; "));
        out.push_back(std::move(f));
    }
    return out;
}

// ---- 5. occupancy timeline ---------------------------------------------------------

Figure occupancy_timeline(const FigureRequest& req, const AlgorithmResult& r) {
    std::size_t k = 0;
    for (std::size_t i = 1; i < r.timing.size(); ++i)
        if (r.timing[i].total_s > r.timing[k].total_s) k = i;
    const KernelTiming& t = r.timing.at(k);
    const KernelRecord& kr = r.kernels.at(k);
    const int sms = req.gpu.sm_count;
    const int bps = std::max(1, kr.occupancy.blocks_per_sm);
    const std::int64_t concurrent = t.concurrent_blocks > 0 ? t.concurrent_blocks : sms;
    const std::int64_t waves = (t.grid + concurrent - 1) / concurrent;

    const std::string lower(r.algo->id);
    Figure f{"occupancy_timeline_" + lower,
             Chart(algo_label(r.algo) + " thread blocks on the " + req.gpu.name + "'s " + std::to_string(sms) + " SMs (" +
                       t.name + ", " + std::to_string(t.grid) + " blocks)",
                   900, 520),
             {}, {}, {}, {}};
    plot::Timeline& tl = f.timeline;
    // Rows are SMs; with several resident blocks per SM, one row per slot, SM-major
    // (every row of an SM carries its name, so thinned labels stay right).
    for (int s = 0; s < sms; ++s)
        for (int slot = 0; slot < bps; ++slot)
            tl.rows.push_back("SM " + std::to_string(s));
    // Colour by wave (launch order / concurrent blocks); beyond 8 waves alternate two colours.
    const bool by_parity = waves > 8;
    if (by_parity) {
        tl.categories = {"odd waves (1st, 3rd, ...)", "even waves (2nd, 4th, ...)"};
        tl.colors = {plot::palette_color(0), plot::palette_color(1)};
    } else {
        for (std::int64_t w = 0; w < std::max<std::int64_t>(waves, 1); ++w) {
            tl.categories.push_back("wave " + std::to_string(w + 1));
            tl.colors.push_back(plot::palette_color(static_cast<std::size_t>(w)));
        }
    }
    std::set<int> busy;
    for (const ScheduledBlock& b : t.timeline) {
        const std::int64_t wave = b.block / concurrent;
        const std::size_t cat = by_parity ? static_cast<std::size_t>(wave % 2)
                                          : static_cast<std::size_t>(std::min<std::int64_t>(wave, static_cast<std::int64_t>(tl.categories.size()) - 1));
        const std::size_t row = static_cast<std::size_t>(b.sm) * static_cast<std::size_t>(bps) + static_cast<std::size_t>(b.slot);
        tl.segments.emplace_back(row, b.start_s, b.end_s, cat, "b" + std::to_string(b.block));
        busy.insert(b.sm);
    }
    const bool truncated = static_cast<std::int64_t>(t.timeline.size()) < t.grid;
    const int idle = truncated ? t.idle_sms : sms - static_cast<int>(busy.size());

    Chart& c = f.chart;
    const double row_px = tl.rows.size() <= 140 ? 5 : 2.5;
    c.set_size(900, std::max(520.0, row_px * static_cast<double>(tl.rows.size()) + 260));
    c.x_axis() = {ScaleKind::Linear, "time since the kernel started", plot::seconds_labels()};
    c.x_axis().min = 0;
    c.y_axis() = {ScaleKind::Linear, bps == 1 ? "SM" : "SM (" + std::to_string(bps) + " rows each, one per resident block)"};
    c.set_legend(plot::LegendPosition::OutsideRight);
    c.set_timeline(tl);

    const AttentionProblem& p = r.problem;
    std::string caption = config_text(req, p, true, {&r}) + "\n";
    caption += (idle > 0 ? std::to_string(idle) + " of " + std::to_string(sms) + " SMs idle (empty rows)"
                         : "No SM idle") +
               ": the grid has " + std::to_string(t.grid) + " thread blocks";
    if (r.algo->grid_text) caption += r.algo->grid_text(p, r.tiles);
    caption += ", " + std::to_string(bps) + " resident per SM (limited by " + kr.occupancy.limiter + "), so " +
               std::to_string(concurrent) + " run at once: " + sig(t.waves, 3) + " waves. Each bar is one thread block, " +
               "coloured by the wave it was launched in; SM time busy: " + pct(t.sm_busy_fraction) +
               ". Kernel time " + plot::format_seconds(t.total_s, 3) + ", bound by " + t.bound + ".";
    const std::int64_t tail = t.grid % concurrent;
    if (waves > 1 && tail > 0)
        caption += " The last wave has " + std::to_string(tail) + " blocks for " + std::to_string(concurrent) +
                   " slots, so part of the chip idles at the end.";
    if (truncated)
        caption += " Only the first " + std::to_string(t.timeline.size()) + " of " + std::to_string(t.grid) +
                   " blocks are drawn.";
    c.set_caption(caption);
    return f;
}

// ---- 6. predicted vs measured ------------------------------------------------------

// The current simulator's time for a measured configuration, when the kernel catalog knows the kernel
// (model/kernel_setup.hpp) and the preset the run was predicted with; else nullopt, and the
// figure shows the time fa-validate recorded on the day of the run.
std::optional<double> current_prediction(const MeasuredResults& m, const MeasuredRecord& r) {
    const KernelVariant* k = find_kernel(r.kernel);
    if (!k || k->algorithm != r.algo->id || m.gpu_preset.empty()) return std::nullopt;
    try {
        const GpuSpec gpu = find_gpu_preset(m.gpu_preset);
        AttentionProblem p;
        p.batch = r.batch;
        p.heads = r.heads;
        p.N = r.N;
        p.Nk = r.Nk;
        p.d = r.d;
        p.dtype = r.dtype;
        p.causal = r.causal;
        p.kv_heads = r.kv_heads;
        const KernelSetup s = kernel_setup(*k, p, gpu, r.launch);
        return simulate(*s.algorithm, p, gpu, s.tiles, s.options).time_s;
    } catch (const UsageError&) {  // a preset this fa-sim lacks, or tiles its model does not hold
        return std::nullopt;
    }
}

Figure predicted_vs_measured(const FigureRequest& req, const MeasuredResults& m) {
    Figure f{"predicted_vs_measured", Chart("Predicted vs measured kernel time (" + m.gpu + ")", 820, 700), {}, {}, {}, {}};
    Chart& c = f.chart;
    c.x_axis() = {ScaleKind::Log10, "measured time", plot::seconds_labels()};
    c.y_axis() = {ScaleKind::Log10, "predicted time", plot::seconds_labels()};
    c.set_equal_xy_range(true);
    c.set_legend(plot::LegendPosition::OutsideRight);
    c.add_identity_line(plot::IdentityLine(0.25, "y = x (exact prediction)", "\u00B125%"));
    // One series per measured kernel, grouped by the simulator algorithm it is compared
    // with: the algorithm's colour, a different marker per kernel of the same algorithm.
    std::size_t within = 0, recomputed = 0, unpredicted = 0;
    for (const Algorithm* a : algorithms()) {
        std::set<std::string> kernels;
        for (const MeasuredRecord& r : m.results)
            if (r.algo == a) kernels.insert(r.kernel);
        std::size_t variant = 0;
        for (const std::string& kernel : kernels) {
            std::vector<double> x, y;
            for (const MeasuredRecord& r : m.results) {
                if (r.algo != a || r.kernel != kernel) continue;
                const std::optional<double> now = current_prediction(m, r);
                if (!now && !r.predicted_s) {  // neither this fa-sim nor the run's could predict it
                    ++unpredicted;
                    continue;
                }
                const double predicted = now ? *now : *r.predicted_s;
                recomputed += now ? 1 : 0;
                x.push_back(r.measured_s);
                y.push_back(predicted);
                within += std::fabs(predicted / r.measured_s - 1) <= 0.25 ? 1 : 0;
            }
            static constexpr Marker markers[] = {Marker::Circle, Marker::Square, Marker::Triangle, Marker::Diamond};
            const std::string name = kernel == a->id ? algo_label(a) : kernel + " (vs " + algo_label(a) + ")";
            add_scatter(f, ScatterSeries(name, x, y)
                               .with_color(algo_color(a))
                               .with_marker(markers[variant++ % 4])
                               .with_size(4.5));
        }
    }
    std::string caption = "Measured: " + m.origin + ", " + std::to_string(m.results.size()) + " kernel configurations on " +
                          m.gpu;
    if (!m.driver.empty()) caption += ", driver " + m.driver;
    if (!m.date.empty()) caption += ", " + m.date;
    const std::string for_preset = m.gpu_preset.empty() ? std::string() : " for the " + m.gpu_preset + " preset";
    const std::size_t shown = m.results.size() - unpredicted;
    if (recomputed == shown)
        caption += ". Predicted: this fa-sim's time" + for_preset + ", each kernel modelled as fa-validate does.";
    else
        caption += ". Predicted: this fa-sim's time" + for_preset + " for " + std::to_string(recomputed) + " of them; for the " +
                   std::to_string(shown - recomputed) + " kernels it does not know, the time fa-validate recorded.";
    caption += " One point per configuration (kernel, N, d, dtype, causal, B, H). " + std::to_string(within) + " of " +
               std::to_string(shown) + " within \u00B125% (shaded).";
    if (unpredicted > 0) {
        caption += " " + std::to_string(unpredicted) + " measured configurations that fa-sim cannot simulate (e.g. batch" + kDot +
                   "heads over " + std::to_string(ProblemLimits::max_batch_heads) + ") are left out.";
        f.notes.push_back(std::to_string(unpredicted) + " configurations fa-sim cannot simulate left out");
    }
    if (!m.failed.empty())
        caption += " " + std::to_string(m.failed.size()) + " entries whose run failed on the GPU are left out.";
    if (!m.skipped.empty())
        caption += " " + std::to_string(m.skipped.size()) + " configurations the run skipped (e.g. too large for the GPU's memory) are left out.";
    if (!m.command.empty()) caption += "\nCommand: " + m.command;
    const std::string preset = m.gpu_preset.empty() ? m.gpu : m.gpu_preset;
    if (preset != req.gpu.name)
        caption += "\nThe other figures are for " + req.gpu.name + "; these measurements are from " + m.gpu + ".";
    c.set_caption(caption);
    if (!m.failed.empty()) f.notes.push_back(std::to_string(m.failed.size()) + " failed runs in " + m.origin + " left out");
    return f;
}

// ---- 7. decoding: time and SM use vs the K/V cache length ----------------------------

std::vector<Figure> decode_vs_context(const FigureRequest& req, const ContextSweep& sweep) {
    const AttentionProblem& p = sweep.problem;
    std::vector<double> nk, once;
    for (std::int64_t v : sweep.nk) {
        nk.push_back(dbl(v));  // K and V of every K/V head read once: what a decode step cannot avoid
        once.push_back(dbl(2 * p.batch_kv_heads() * v * p.d * p.elem_bytes()) / req.gpu.effective_hbm_bandwidth());
    }
    const std::string step = "B=" + std::to_string(p.batch) + ", H=" + std::to_string(p.heads) +
                             (p.grouped() ? " over " + std::to_string(p.kv_head_count()) + " K/V heads" : std::string()) +
                             ", N=" + std::to_string(p.N) + ", d=" + std::to_string(p.d) + ", " + dtype_name(p.dtype) +
                             (p.causal ? ", causal" : "");
    std::string config = "Configuration: " + req.gpu.name + "; a decode step, " + step + "; Nk from " +
                         plot::format_tokens(nk.front(), 3) + " to " + plot::format_tokens(nk.back(), 3) + " keys.";

    Figure time{"decode_time_vs_context", Chart("Decoding: predicted time vs K/V cache length", 900, 600), {}, {}, {}, {}};
    time.chart.x_axis() = {ScaleKind::Log2, "keys in the cache Nk (tokens)", plot::tokens_labels()};
    time.chart.y_axis() = {ScaleKind::Log10, "predicted time", plot::seconds_labels()};
    time.chart.set_legend(plot::LegendPosition::OutsideRight);
    add_line(time,
             LineSeries("K and V read once at " + plot::format_si(req.gpu.effective_hbm_bandwidth(), "B/s", 3), nk, once)
                 .with_color("#888888")
                 .with_marker(Marker::None)
                 .with_style(LineStyle::Dotted)
                 .with_width(1.4),
             true);
    Figure busy{"decode_sm_busy_vs_context", Chart("Decoding: share of SM time in use vs K/V cache length", 900, 600), {}, {}, {}, {}};
    busy.chart.x_axis() = {ScaleKind::Log2, "keys in the cache Nk (tokens)", plot::tokens_labels()};
    busy.chart.y_axis() = {ScaleKind::Linear, "SM time spent on blocks, main kernel", plot::percent_labels()};
    busy.chart.y_axis().min = 0;
    busy.chart.y_axis().max = 1;
    busy.chart.set_legend(plot::LegendPosition::OutsideRight);
    std::vector<std::string> grids;
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        const Algorithm* algo = sweep.algos[a];
        std::vector<double> t, share;
        for (const AlgorithmResult& r : sweep.by_algo[a]) {
            t.push_back(r.time_s);
            share.push_back(r.longest_kernel().sm_busy_fraction);
        }
        add_line(time, LineSeries(algo_label(algo), nk, t).with_color(algo_color(algo)).with_marker(Marker::Circle));
        add_line(busy, LineSeries(algo_label(algo), nk, share).with_color(algo_color(algo)).with_marker(Marker::Circle));
        const AlgorithmResult& first = sweep.by_algo[a].front();
        const AlgorithmResult& last = sweep.by_algo[a].back();
        std::string g = algo_label(algo) + " " + std::to_string(first.tiles.Br) + kTimes + std::to_string(first.tiles.Bc) +
                        " tiles, " + std::to_string(first.kernels.front().desc.grid()) + " blocks";
        if (algo->kv_splits)
            g += " (" + std::to_string(first.tiles.kv_splits) + " splits) at Nk=" + plot::format_tokens(nk.front(), 3) + ", " +
                 std::to_string(last.kernels.front().desc.grid()) + " (" + std::to_string(last.tiles.kv_splits) +
                 " splits) at " + plot::format_tokens(nk.back(), 3);
        grids.push_back(g);
    }
    const double fa2_last = sweep.by_algo[0].back().time_s, fd_last = sweep.by_algo[1].back().time_s;
    const std::string common = config + " " + join(grids, "; ") + " on " + std::to_string(req.gpu.sm_count) + " SMs.\n";
    time.chart.set_caption(
        common + "With one query row FA2 launches one block per Q tile of each head, fewer than the SMs: the others idle "
                 "while each block streams its head's whole cache. FlashDecoding splits the keys over enough blocks to fill "
                 "the GPU (flash-attention's heuristic) and adds a combine kernel; at Nk=" + plot::format_tokens(nk.back(), 3) +
        " it is predicted " + sig(fa2_last / fd_last, 3) + kTimes + " faster, " + sig(fd_last / once.back(), 3) + kTimes +
        " the time to read K and V once (grey).");
    busy.chart.set_caption(common + "SM busy share: SM time spent running blocks over the SMs times the kernel's span "
                                    "(the longest kernel of each algorithm), from the simulator's block schedule.");
    return {std::move(time), std::move(busy)};
}

// ---- 8. training: memory held between the passes, FLOPs with recomputation ----------

namespace {

// The exponent of y ∝ N^k between the first and last points (2: quadratic, 1: linear).
double growth_exponent(const std::vector<double>& x, const std::vector<double>& y) {
    if (x.size() < 2 || y.front() <= 0 || y.back() <= 0) return 0;
    return std::log(y.back() / y.front()) / std::log(x.back() / x.front());
}

std::vector<const AlgorithmResult*> firsts(const NSweep& sweep) {
    std::vector<const AlgorithmResult*> first;
    for (const auto& row : sweep.by_algo)
        if (!row.empty()) first.push_back(&row.front());
    return first;
}

}  // namespace

Figure held_memory_vs_n(const FigureRequest& req, const NSweep& sweep) {
    Figure f{"held_memory_vs_n" + pass_suffix(req.pass),
             Chart("Memory kept from the forward for the backward vs sequence length", 940, 600), {}, {}, {}, {}};
    Chart& c = f.chart;
    c.x_axis() = {ScaleKind::Log2, "sequence length N (tokens)", plot::tokens_labels()};
    c.y_axis() = {ScaleKind::Log10, "bytes held in HBM between the passes, all B" + kDot + "H heads", plot::si_labels("B")};
    c.set_legend(plot::LegendPosition::OutsideRight);
    std::vector<std::string> slopes;
    std::vector<double> all_x;
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        const auto& row = sweep.by_algo[a];
        if (row.empty()) continue;
        std::vector<double> x, y;
        for (const AlgorithmResult& r : row) {
            x.push_back(dbl(r.problem.N));
            y.push_back(dbl(r.held_between_passes_bytes));
        }
        if (x.size() > all_x.size()) all_x = x;
        add_line(f, LineSeries(algo_label(sweep.algos[a]), x, y).with_color(algo_color(sweep.algos[a])).with_marker(Marker::Circle));
        const double k = growth_exponent(x, y);
        slopes.push_back(algo_label(sweep.algos[a]) + " N^" + sig(k, 3) + (std::llround(k) == 2 ? " (quadratic)" : std::llround(k) == 1 ? " (linear)" : ""));
    }
    if (!all_x.empty())
        add_line(f,
                 LineSeries(req.gpu.name + "'s HBM", all_x, std::vector<double>(all_x.size(), dbl(req.gpu.hbm_bytes)))
                     .with_color("#888888")
                     .with_marker(Marker::None)
                     .with_style(LineStyle::Dotted)
                     .with_width(1.4),
                 true);
    std::string caption = config_text(req, req.problem, false, firsts(sweep)) + "\n";
    caption += "What the forward writes besides O and the backward reads back: standard attention P (B" + kDot + "H" + kDot +
               "N" + kDot + "Nk elements in the storage dtype), FlashAttention-1 its row statistics m and \u2113, "
               "FlashAttention-2 the logsumexp LSE (B" + kDot + "H" + kDot + "N fp32 values each); the flash "
               "algorithms recompute S and P instead. Growth over the sweep: " + join(slopes, ", ") +
               ". Grey dotted: the GPU's whole HBM.";
    c.set_caption(caption);
    return f;
}

Figure flops_vs_n(const FigureRequest& req, const NSweep& sweep) {
    Figure f{"flops_vs_n" + pass_suffix(req.pass),
             Chart("Matrix-product FLOPs vs sequence length" + pass_title(req.pass) + ", with the recomputation", 940, 600),
             {}, {}, {}, {}};
    Chart& c = f.chart;
    c.x_axis() = {ScaleKind::Log2, "sequence length N (tokens)", plot::tokens_labels()};
    c.y_axis() = {ScaleKind::Log10, "matmul FLOPs, all B" + kDot + "H heads", plot::si_labels("FLOP")};
    c.set_legend(plot::LegendPosition::OutsideRight);
    const AlgorithmResult* standard_last = nullptr;
    std::vector<const AlgorithmResult*> flash_last;
    for (std::size_t a = 0; a < sweep.algos.size(); ++a) {
        const auto& row = sweep.by_algo[a];
        if (row.empty()) continue;
        std::vector<double> x, total, again;
        for (const AlgorithmResult& r : row) {
            x.push_back(dbl(r.problem.N));
            total.push_back(dbl(r.matmul_flops));
            again.push_back(dbl(r.recomputed_matmul_flops));
        }
        const std::string color = algo_color(sweep.algos[a]);
        add_line(f, LineSeries(algo_label(sweep.algos[a]) + " matmul", x, total).with_color(color).with_marker(Marker::Circle));
        if (std::any_of(again.begin(), again.end(), [](double v) { return v > 0; }))
            add_line(f, LineSeries(algo_label(sweep.algos[a]) + " of them recomputed", x, again)
                            .with_color(color)
                            .with_marker(Marker::Square)
                            .with_style(LineStyle::Dashed));
        if (sweep.algos[a]->baseline) standard_last = &row.back();
        else flash_last.push_back(&row.back());
    }
    std::string caption = config_text(req, req.problem, false, firsts(sweep)) + "\n";
    caption += "Solid: every matrix product the passes run (2 FLOPs per multiply-add, whole tiles). Dashed: of them, "
               "the products the backward redoes instead of reading them back (S = Q" + kDot + "K\u1D40; with --dq "
               "separate also S and dP in FA2's dQ kernel). Standard attention reads its stored P and recomputes "
               "nothing: the forward's 4" + kDot + "N" + kDot + "Nk" + kDot + "d and the backward's 8 per head; "
               "FlashAttention 4 + 10; lines that coincide (FA1 and FA2 run the same products) lie on top of each other.";
    if (standard_last) {
        std::vector<std::string> more;
        for (const AlgorithmResult* r : flash_last)
            if (r->problem.N == standard_last->problem.N && standard_last->matmul_flops > 0)
                more.push_back(algo_label(r->forward ? r->forward : r->algo) + " " +
                               sig(dbl(r->matmul_flops) / dbl(standard_last->matmul_flops), 3) + kTimes);
        if (!more.empty())
            caption += " At N=" + std::to_string(standard_last->problem.N) + ", standard attention's FLOPs times: " +
                       join(more, ", ") + ".";
    }
    c.set_caption(caption);
    return f;
}

std::vector<Figure> training_figures(const FigureRequest& req, const NSweep& sweep, const std::vector<AlgorithmResult>& at_n) {
    std::vector<Figure> figs;
    figs.push_back(traffic_vs_n(req, sweep));
    figs.push_back(tensor_bars(req, at_n));
    figs.push_back(held_memory_vs_n(req, sweep));
    figs.push_back(flops_vs_n(req, sweep));
    return figs;
}

// ---- all of them -------------------------------------------------------------------

namespace {

std::vector<Figure> make_all(const FigureRequest& req, std::vector<std::string>* notes, Progress* progress) {
    if (req.algos.empty())
        throw usage_error("no algorithm to plot", "at least one of standard, tiled, fa1, fa2",
                          "pass --algo all or name an algorithm");
    // A missing, unreadable or malformed measured-results file fails before any simulation.
    std::optional<MeasuredResults> measured;
    if (req.measured_path) measured = read_measured_results(*req.measured_path);
    std::vector<Figure> figs;
    const NSweep sweep = run_n_sweep(req, progress);
    const std::vector<AlgorithmResult> at_n = run_chosen(req);
    if (progress) progress->tick();
    if (req.pass != PassSelection::fwd) {  // training: the figures of backward_figures.cpp
        if (measured && notes) notes->push_back("predicted_vs_measured: not drawn with --pass (it plots the forward kernels' runs)");
        figs = training_figures(req, sweep, at_n);
        if (notes) {
            notes->push_back("roofline, block_size_sweep, occupancy_timeline and decode figures: drawn for the forward pass "
                             "only (fa-sim --plot without --pass)");
            for (const Figure& f : figs)
                for (const std::string& n : f.notes) notes->push_back(f.name + ": " + n);
        }
        return figs;
    }
    figs.push_back(traffic_vs_n(req, sweep));
    figs.push_back(tensor_bars(req, at_n));
    figs.push_back(roofline(req, at_n));
    const BlockSizeSweep bs = run_block_size_sweep(req);
    if (progress) progress->tick();
    auto bfigs = block_size_sweep(req, bs);
    if (bfigs.empty() && notes)
        notes->push_back("block_size_sweep: not drawn (it needs " +
                         ids_where([](const Algorithm& a) { return a.tile_sweep != TileSweep::none; }) + " among the algorithms)");
    for (auto& b : bfigs) figs.push_back(std::move(b));
    bool timeline = false;
    for (const AlgorithmResult& r : at_n)
        if (r.algo->timeline_figure) {
            figs.push_back(occupancy_timeline(req, r));
            timeline = true;
        }
    if (!timeline && notes)
        notes->push_back("occupancy_timeline: not drawn (it needs " +
                         ids_where([](const Algorithm& a) { return a.timeline_figure; }) + " among the algorithms)");
    for (Figure& d : decode_vs_context(req, run_context_sweep(req, progress))) figs.push_back(std::move(d));
    if (measured) {
        figs.push_back(predicted_vs_measured(req, *measured));
    } else if (notes) {
        notes->push_back("predicted_vs_measured: not drawn, no measured-results file given");
    }
    if (notes)
        for (const Figure& f : figs)
            for (const std::string& n : f.notes) notes->push_back(f.name + ": " + n);
    return figs;
}

std::int64_t simulation_steps(const FigureRequest& req) {
    const std::size_t n = req.sweep_n.empty() ? default_sweep_n().size() : req.sweep_n.size();
    return static_cast<std::int64_t>(req.algos.size() * n) + 2 + 2 * static_cast<std::int64_t>(default_sweep_context().size());
}

}  // namespace

std::vector<Figure> make_figures(const FigureRequest& req, std::vector<std::string>* notes) {
    Progress progress("fa-sim --plot: simulating", simulation_steps(req), req.progress);
    return make_all(req, notes, &progress);
}

std::vector<std::string> write_figures(const std::string& dir, const FigureRequest& req, std::vector<std::string>* notes) {
    const std::filesystem::path d(dir);
    // A directory that is missing or does not accept files fails now, before any work.
    plot::check_output_directory(d, "--plot");

    std::vector<Figure> figs;
    {
        Progress progress("fa-sim --plot: simulating", simulation_steps(req), req.progress);
        figs = make_all(req, notes, &progress);
    }
    // SVGs first (atomic writes), then the PNGs: the first conversion tells whether a
    // converter exists; the rest run a few at a time (each is a separate process).
    Progress progress("fa-sim --plot: writing", static_cast<std::int64_t>(figs.size()), req.progress);
    std::mutex progress_mutex;
    auto tick = [&] {
        std::lock_guard<std::mutex> lock(progress_mutex);
        progress.tick();
    };
    for (const Figure& f : figs) f.chart.save_svg(d / (f.name + ".svg"));
    std::vector<plot::PngResult> pngs(figs.size());
    for (std::size_t i = 0; i < figs.size(); ++i) pngs[i].png = d / (figs[i].name + ".png");
    auto convert = [&](std::size_t i) {
        pngs[i] = plot::convert_svg_to_png(d / (figs[i].name + ".svg"), d / (figs[i].name + ".png"));
        tick();
    };
    if (req.png && !figs.empty()) {
        convert(0);
        if (pngs[0].converted) {
            std::atomic<std::size_t> next{1};
            auto worker = [&] {
                for (std::size_t i = next++; i < figs.size(); i = next++) convert(i);
            };
            const std::size_t threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), 4);
            std::vector<std::thread> pool;
            for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
            worker();
            for (std::thread& t : pool) t.join();
        }
    }
    std::vector<std::string> written;
    std::string png_failure;
    for (std::size_t i = 0; i < figs.size(); ++i) {
        written.push_back((d / (figs[i].name + ".svg")).string());
        if (pngs[i].converted) written.push_back(pngs[i].png.string());
        else if (req.png && png_failure.empty() && !pngs[i].message.empty()) png_failure = pngs[i].message;
    }
    if (notes && !png_failure.empty()) notes->push_back(png_failure);  // said once
    // A PNG left by an earlier run beside an SVG whose conversion failed now shows other numbers: remove it,
    // as a successful conversion would have replaced it.
    std::size_t stale = 0;
    for (std::size_t i = 0; i < figs.size(); ++i) {
        std::error_code ec;
        if (req.png && !pngs[i].converted && std::filesystem::is_regular_file(pngs[i].png, ec) &&
            std::filesystem::remove(pngs[i].png, ec))
            ++stale;
    }
    if (notes && stale > 0)
        notes->push_back("removed " + std::to_string(stale) + " PNG file(s) of an earlier run in " + dir +
                         " that no longer matched their SVGs");
    // Only files that are there are reported as written: a directory renamed or removed meanwhile is an error.
    for (const std::string& path : written) {
        std::error_code ec;
        if (!std::filesystem::is_regular_file(path, ec))
            throw usage_error("--plot " + dir + ": " + path + " is gone after it was written",
                              "the output directory must stay in place until fa-sim is done",
                              "run the command again and leave the directory alone while it runs");
    }
    return written;
}

}  // namespace fasim::figures
