// plot-gallery OUT_DIR: one example chart of every series type, as SVG (and PNG
// when a converter is installed), plus the terminal bar chart in both modes.
// The numbers are the papers' closed forms or made up for the picture;
// they only exercise the plotting code.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "plot/chart.hpp"
#include "plot/png_convert.hpp"
#include "plot/terminal_bars.hpp"

namespace fs = std::filesystem;
using namespace fasim::plot;

namespace {

constexpr double kBytes = 2;       // fp16
constexpr double kBH = 16;         // B=1, H=16
constexpr double kD = 64;
constexpr double kM = 49152;       // SRAM elements per thread block (96 KiB of fp16)

double standard_bytes(double n) { return (4 * n * kD + 4 * n * n) * kBytes * kBH; }
double fa1_bytes(double n) {
    const double bc = std::ceil(kM / (4 * kD));
    const double tc = std::ceil(n / bc);
    return (2 * n * kD + tc * (2 * n * kD + 2 * n) + (n * kD + 2 * n) + tc * (n * kD + 2 * n)) * kBytes * kBH;
}
double fa2_bytes(double n) {
    const double tr = std::ceil(n / 128);
    return (n * kD + tr * 2 * n * kD + n * kD + n) * kBytes * kBH;
}
double compulsory_bytes(double n) { return 4 * n * kD * kBytes * kBH; }

const char* kConfig = "A100-SXM4-40GB, B=1, H=16, d=64, fp16, non-causal";

void save(const Chart& chart, const fs::path& dir, const std::string& name) {
    const fs::path svg = dir / (name + ".svg");
    chart.save_svg(svg);
    const PngResult png = convert_svg_to_png(svg, dir / (name + ".png"));
    std::cout << "wrote " << svg.string() << "; " << png.message << "\n";
}

Chart traffic_vs_n() {
    Chart c("HBM traffic vs sequence length");
    c.set_subtitle("Forward pass, per layer: standard attention grows as N\xC2\xB2, FlashAttention as N\xC2\xB2" "d\xC2\xB2/M");
    c.set_caption(std::string(kConfig) + ", SRAM M = 48Ki elements per thread block. The papers' closed forms (example data for the plotting library).");
    c.x_axis() = {ScaleKind::Log2, "sequence length N (tokens)", tokens_labels()};
    c.y_axis() = {ScaleKind::Log10, "HBM traffic (bytes)", si_labels("B")};
    std::vector<double> n;
    for (double v = 512; v <= 65536; v *= 2) n.push_back(v);
    auto series = [&](double (*f)(double)) {
        std::vector<double> y;
        for (double v : n) y.push_back(f(v));
        return y;
    };
    c.add_line(LineSeries("standard", n, series(standard_bytes)));
    c.add_line(LineSeries("FlashAttention-1", n, series(fa1_bytes)));
    c.add_line(LineSeries("FlashAttention-2", n, series(fa2_bytes)));
    c.add_line(LineSeries("compulsory (Q, K, V, O once)", n, series(compulsory_bytes))
                   .with_style(LineStyle::Dashed)
                   .with_marker(Marker::None));
    c.add_vertical_marker(VerticalMarker(17678, "S and P exceed HBM here"));
    return c;
}

Chart per_tensor_bars() {
    Chart c("Where the bytes go: HBM traffic per tensor at N = 4096");
    c.set_caption(std::string(kConfig) + ". The papers' closed forms (example data for the plotting library).");
    c.y_axis() = {ScaleKind::Linear, "HBM traffic (bytes)", si_labels("B")};
    const double n = 4096;
    const double qkvo = n * kD * kBytes * kBH;
    const double s = n * n * kBytes * kBH;
    const double tr = n / 128, tc = std::ceil(n / std::ceil(kM / (4 * kD)));
    StackedBars b;
    b.categories = {"standard", "FlashAttention-1", "FlashAttention-2"};
    b.stacks = {"Q", "K, V", "O", "S, P", "\xE2\x84\x93, m / logsumexp"};
    const double row = n * kBytes * kBH;  // one value per query row
    // FA1: Q and O read on each of the Tc outer iterations, O written Tc + 1 times,
    // l and m (2 per row) likewise; FA2: K and V read once per query block.
    b.values = {
        {qkvo, tc * qkvo, qkvo},
        {2 * qkvo, 2 * qkvo, tr * 2 * qkvo},
        {qkvo, (2 * tc + 1) * qkvo, qkvo},
        {4 * s, 0, 0},
        {0, (4 * tc + 2) * row, row},
    };
    c.set_stacked_bars(b);
    return c;
}

Chart roofline() {
    Chart c("Roofline: A100-SXM4-40GB, fp16 tensor cores");
    c.set_caption("Peak 312 TFLOP/s, HBM 1.555 TB/s (datasheet). Points: example values, not measured.");
    c.x_axis() = {ScaleKind::Log10, "arithmetic intensity (FLOP/byte)", plain_labels()};
    c.y_axis() = {ScaleKind::Log10, "attainable throughput (FLOP/s)", si_labels("FLOP/s")};
    std::vector<double> ai, perf;
    // Two segments meeting at the ridge point.
    ai = {1, 312e12 / 1.555e12, 10000};
    perf = {1.555e12, 312e12, 312e12};
    c.add_line(LineSeries("roofline", ai, perf).with_marker(Marker::None).with_color("#000000").with_width(1.6));
    c.add_scatter(ScatterSeries("standard", {60}, {25e12}));
    c.add_scatter(ScatterSeries("FlashAttention-1", {900}, {125e12}));
    c.add_scatter(ScatterSeries("FlashAttention-2", {1400}, {210e12}));
    c.add_vertical_marker(VerticalMarker(312e12 / 1.555e12, "ridge point: 201 FLOP/byte"));
    return c;
}

Chart block_sweep() {
    Chart c("Block-size sweep: predicted runtime of FlashAttention-2");
    c.set_caption(std::string(kConfig) + ", N = 4096. Example values.");
    c.x_axis() = {ScaleKind::Linear, "query block rows Br", plain_labels()};
    c.y_axis() = {ScaleKind::Linear, "predicted runtime", seconds_labels()};
    c.y_axis().include_zero = true;
    const std::vector<double> br = {16, 32, 64, 96, 128, 160, 192, 224, 256};
    std::vector<double> d64, d128;
    for (double b : br) {
        d64.push_back((420 + 9000 / b + 0.004 * b * b) * 1e-6);
        d128.push_back((700 + 16000 / b + 0.01 * b * b) * 1e-6);
    }
    c.add_line(LineSeries("d = 64", br, d64));
    c.add_line(LineSeries("d = 128", br, d128).with_style(LineStyle::Dashed));
    return c;
}

Chart occupancy(std::size_t sms, std::size_t blocks, const std::string& title) {
    Chart c(title);
    c.set_caption("Grid of " + std::to_string(blocks) + " thread blocks on " + std::to_string(sms) +
                  " SMs, one block per SM at a time; a wave takes about 10 \xC2\xB5s. Example schedule.");
    c.x_axis() = {ScaleKind::Linear, "time (\xC2\xB5s)", plain_labels()};
    c.y_axis().label = "SM";
    Timeline t;
    for (std::size_t s = 0; s < sms; ++s) t.rows.push_back("SM " + std::to_string(s));
    const std::size_t waves = (blocks + sms - 1) / sms;
    for (std::size_t w = 0; w < waves; ++w) t.categories.push_back("wave " + std::to_string(w + 1));
    for (std::size_t b = 0; b < blocks; ++b) {
        const std::size_t w = b / sms;
        const double start = static_cast<double>(w) * 10.0;
        const double len = 9.0 + static_cast<double>((b * 7) % 10) / 10.0;
        t.segments.push_back({b % sms, start, start + len, w, "blk " + std::to_string(b)});
    }
    c.set_timeline(t);
    for (std::size_t w = 1; w < waves; ++w)
        c.add_vertical_marker(VerticalMarker(static_cast<double>(w) * 10.0, "wave " + std::to_string(w + 1) + " starts"));
    return c;
}

Chart predicted_vs_measured() {
    Chart c("Predicted vs measured runtime <&> \"quotes\"");
    c.set_subtitle("Points inside the band are within \xC2\xB1" "20% of the measurement");
    c.set_caption("H200, bf16, forward. Example values, not measured: the real comparison comes from cuda/ results.");
    c.x_axis() = {ScaleKind::Log10, "measured runtime", seconds_labels()};
    c.y_axis() = {ScaleKind::Log10, "predicted runtime", seconds_labels()};
    c.set_equal_xy_range(true);
    c.add_identity_line(IdentityLine(0.2));
    c.add_scatter(ScatterSeries("standard", {2.1e-4, 8.0e-4, 3.3e-3}, {1.9e-4, 9.1e-4, 2.9e-3}));
    c.add_scatter(ScatterSeries("FlashAttention-2", {6e-5, 2.2e-4, 8.4e-4, 3.4e-3}, {5.5e-5, 2.4e-4, 7.6e-4, 4.5e-3}));
    return c;
}

Chart band_example() {
    Chart c("Measured runtime with min\xE2\x80\x93max band over 20 runs");
    c.set_caption("Example values.");
    c.x_axis() = {ScaleKind::Log2, "sequence length N", tokens_labels()};
    c.y_axis() = {ScaleKind::Log10, "runtime", seconds_labels()};
    std::vector<double> n, med, lo, hi;
    for (double v = 1024; v <= 32768; v *= 2) {
        n.push_back(v);
        const double t = 2e-9 * v * v / 64 + 8e-6;
        med.push_back(t);
        lo.push_back(t * 0.9);
        hi.push_back(t * 1.15);
    }
    c.add_band(Band("min\xE2\x80\x93max", n, lo, hi).with_color("#0072B2"));
    c.add_line(LineSeries("median", n, med).with_color("#0072B2"));
    return c;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: plot-gallery OUT_DIR\n";
        return 2;
    }
    const fs::path dir = argv[1];
    try {
        save(traffic_vs_n(), dir, "line_traffic_vs_n");
        save(per_tensor_bars(), dir, "stacked_bars_per_tensor");
        save(roofline(), dir, "roofline");
        save(block_sweep(), dir, "line_block_sweep");
        save(occupancy(16, 40, "Occupancy: which SM runs which block, wave by wave"), dir, "timeline_occupancy");
        save(occupancy(108, 256, "Occupancy on A100 (108 SMs): 256 blocks, 3 waves"), dir, "timeline_occupancy_108");
        save(predicted_vs_measured(), dir, "scatter_predicted_vs_measured");
        save(band_example(), dir, "band_runtime");
    } catch (const fasim::UsageError& e) {
        std::cerr << "plot-gallery: " << e.what() << "\n";
        return 2;
    }
    const std::vector<TerminalBar> bars = {
        {"standard", standard_bytes(4096), ""},
        {"FlashAttention-1", fa1_bytes(4096), ""},
        {"FlashAttention-2", fa2_bytes(4096), ""},
        {"compulsory", compulsory_bytes(4096), ""},
    };
    TerminalBarsOptions opt;
    opt.title = "HBM traffic at N = 4096 (" + std::string(kConfig) + ")";
    opt.format = si_labels("B");
    std::cout << "\n" << terminal_bars(bars, opt) << "\n";
    opt.unicode = false;
    std::cout << terminal_bars(bars, opt);
    return 0;
}
