// Tests of sim/figures: the figures `fa-sim --plot DIR` writes.
#include <catch2/catch.hpp>

#include "../common/test_files.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../plot/xml_check.hpp"
#include "common/errors.hpp"
#include "figures/figures.hpp"
#include "figures/measured_results.hpp"
#include "figures/progress.hpp"
#include "gpu/gpu_catalog.hpp"
#include "plot/png_convert.hpp"

namespace fs = std::filesystem;
using namespace fasim::test;
using namespace fasim;
using namespace fasim::figures;

namespace {





// A quick request: the default problem (A100, B=1, H=16, N=4096, d=64, fp16) with a short sweep.
FigureRequest small_request() {
    FigureRequest req;
    req.sweep_n = {512, 1024, 2048, 4096};
    return req;
}

// The sweep and chosen-N results every figure test shares (simulated once).
const NSweep& small_sweep() {
    static const NSweep s = run_n_sweep(small_request());
    return s;
}
const std::vector<AlgorithmResult>& small_chosen() {
    static const std::vector<AlgorithmResult> r = run_chosen(small_request());
    return r;
}

struct Box {
    double x = 0, y = 0, w = 0, h = 0;
    bool contains(double px, double py, double tol = 0.75) const {
        return px >= x - tol && px <= x + w + tol && py >= y - tol && py <= y + h + tol;
    }
};

double attr(const xmlcheck::Element& e, const char* name) { return std::stod(e.attrs.at(name)); }

// The plot area: the rectangle of the chart's clipPath.
Box plot_box(const xmlcheck::Document& d) {
    for (const auto& e : d.elements)
        if (e.name == "rect" && e.parent != static_cast<std::size_t>(-1) && d.elements[e.parent].name == "clipPath")
            return {attr(e, "x"), attr(e, "y"), attr(e, "width"), attr(e, "height")};
    FAIL("no clipPath rectangle");
    return {};
}

std::vector<std::pair<double, double>> polygon_points(const std::string& s) {
    std::vector<std::pair<double, double>> pts;
    std::istringstream in(s);
    std::string pair;
    while (in >> pair) {
        const auto comma = pair.find(',');
        pts.emplace_back(std::stod(pair.substr(0, comma)), std::stod(pair.substr(comma + 1)));
    }
    return pts;
}

// Every data mark lies inside the plot area: the axis ranges contain the data. Markers
// (circles, squares, polygons) are checked at their centre, bars and timeline segments
// (`whole_rects`) with both corners.
void check_marks_inside(const xmlcheck::Document& d, bool whole_rects = false) {
    const Box box = plot_box(d);
    std::size_t marks = 0;
    for (const auto& e : d.elements) {
        if (!e.attrs.count("data-series")) continue;
        ++marks;
        if (e.name == "circle") {
            CHECK(box.contains(attr(e, "cx"), attr(e, "cy")));
        } else if (e.name == "rect") {
            const double x = attr(e, "x"), y = attr(e, "y"), w = attr(e, "width"), h = attr(e, "height");
            if (whole_rects) {
                CHECK(box.contains(x, y));
                CHECK(box.contains(x + w, y + h));
            } else {
                CHECK(box.contains(x + w / 2, y + h / 2));
            }
        } else if (e.name == "polygon") {
            double cx = 0, cy = 0;
            const auto pts = polygon_points(e.attrs.at("points"));
            for (const auto& [px, py] : pts) {
                cx += px / static_cast<double>(pts.size());
                cy += py / static_cast<double>(pts.size());
            }
            CHECK(box.contains(cx, cy));
        }
    }
    CHECK(marks > 0);
    // Lines without markers: every vertex inside too.
    for (const auto& e : d.elements) {
        if (e.name != "polyline" || !e.attrs.count("class") || e.attrs.at("class").find("series-") == std::string::npos)
            continue;
        for (const auto& [px, py] : polygon_points(e.attrs.at("points"))) CHECK(box.contains(px, py));
    }
}

std::size_t polyline_vertices(const xmlcheck::Document& d, std::size_t k) {
    const auto lines = d.with_class("series-" + std::to_string(k) + "-line");
    REQUIRE(lines.size() == 1);
    return polygon_points(lines.front()->attrs.at("points")).size();
}

// One mark (or, for a line without markers, one vertex) per value of every series.
void check_series_points(const Figure& f, const xmlcheck::Document& d) {
    for (std::size_t k = 0; k < f.series.size(); ++k) {
        INFO(f.name << " series " << k << " \"" << f.series[k].name << "\"");
        const std::size_t marks = d.count_attr("data-series", std::to_string(k));
        if (marks == 0) CHECK(polyline_vertices(d, k) == f.series[k].x.size());
        else CHECK(marks == f.series[k].x.size());
    }
}

const SeriesData* find_series(const Figure& f, const std::string& name) {
    for (const auto& s : f.series)
        if (s.name == name) return &s;
    return nullptr;
}

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::string caption_text(const xmlcheck::Document& d) {
    std::string s;
    for (const auto* e : d.with_class("caption")) s += e->text + " ";
    return s;
}

const AlgorithmResult& result_of(const std::vector<AlgorithmResult>& rs, const Algorithm* a) {
    for (const auto& r : rs)
        if (r.algo == a) return r;
    FAIL("algorithm missing");
    return rs.front();
}

std::string measured_json(const std::string& results) {
    return R"({"schema_version": 1, "gpu": "H200", "driver": "580.65", "date": "2025-11-20", "results": [)" + results +
           "]}";
}
const char* kGoodRecord =
    R"({"algo": "fa2", "N": 4096, "d": 64, "dtype": "fp16", "causal": false, "batch": 4, "heads": 16,
        "measured_s": 3.3e-4, "predicted_s": 2.9e-4})";

}  // namespace

TEST_CASE("traffic_vs_n: one point per N, closed forms, HBM limit marker", "[figures]") {
    const FigureRequest req = small_request();
    const NSweep& sweep = small_sweep();
    const Figure f = traffic_vs_n(req, sweep);
    const auto d = parse_ok(f.chart.to_svg());
    check_series_points(f, d);
    check_marks_inside(d);

    // Every simulated series has exactly one point per N of the sweep.
    for (const Algorithm* a : training_algorithms()) {
        for (const char* level : {" HBM", " DRAM"}) {
            const std::string name = std::string(a->id == "fa1" ? "FA1" : a->id == "fa2" ? "FA2" : std::string(a->id)) + level;
            const SeriesData* s = find_series(f, name);
            REQUIRE(s);
            CHECK(s->x.size() == sweep.n.size());
        }
    }
    // The dashed closed forms are the formulas, evaluated at the sweep points.
    const SeriesData* std_cf = find_series(f, "standard closed form");
    const SeriesData* fa1_cf = find_series(f, "FA1 closed form");
    const SeriesData* fa2_cf = find_series(f, "FA2 closed form");
    REQUIRE(std_cf);
    REQUIRE(fa1_cf);
    REQUIRE(fa2_cf);
    CHECK(find_series(f, "tiled closed form") == nullptr);
    const double e = 2, BH = 16, d_ = 64;
    const auto fa1_bc = static_cast<double>(result_of(small_chosen(), &algorithm("fa1")).tiles.Bc);
    const auto fa2_br = static_cast<double>(result_of(small_chosen(), &algorithm("fa2")).tiles.Br);
    CHECK(fa1_bc == 326);  // ⌈M/4d⌉ with M = 166912 B / 2 B on the A100
    CHECK(fa2_br == 128);
    for (std::size_t i = 0; i < sweep.n.size(); ++i) {
        const auto N = static_cast<double>(sweep.n[i]);
        CHECK(std_cf->x[i] == N);
        CHECK(std_cf->y[i] == Approx(4 * N * N * e * BH).epsilon(1e-12));
        CHECK(fa1_cf->y[i] == Approx((N / fa1_bc) * (N * d_ * e + 2 * N * d_ * 4 + 4 * N * 4) * BH).epsilon(1e-12));
        CHECK(fa2_cf->y[i] == Approx(2 * N * N * d_ * e * BH / fa2_br).epsilon(1e-12));
    }
    // The closed forms are the leading terms: close to the simulated HBM traffic at the largest N.
    const std::size_t last = sweep.n.size() - 1;
    CHECK(fa2_cf->y[last] / find_series(f, "FA2 HBM")->y[last] == Approx(1).epsilon(0.1));
    CHECK(fa1_cf->y[last] / find_series(f, "FA1 HBM")->y[last] == Approx(1).epsilon(0.15));
    CHECK(std_cf->y[last] / find_series(f, "standard HBM")->y[last] == Approx(1).epsilon(0.5));

    // The caption carries the configuration and names the formulas.
    const std::string cap = caption_text(d);
    for (const char* s : {"A100-SXM4-40GB", "B=1", "H=16", "d=64", "fp16", "non-causal", "FA1 64\u00D7326", "FA2 128\u00D7128",
                          "4\u00B7N\u00B2\u00B7e\u00B7B\u00B7H", "Bc=326", "Br=128"})
        CHECK(contains(cap, s));
    // Up to 4096 standard attention fits in 40 GiB: no marker, and the caption says so.
    CHECK(d.with_class("marker-label").empty());
    CHECK(contains(cap, "fit in the 40 GiB of HBM at every N shown"));
    CHECK(!contains(cap, "Left out"));
}

TEST_CASE("traffic_vs_n leaves out points over the work budget and says so", "[figures]") {
    // T4, d=128: FA1's tiles shrink to 42x42 (64 KiB must hold K_j, V_j, Q_i and the split-K
    // exchange), so its tile steps grow as N²/(Br·Bc); at N=16384 with B·H=16 that is 2.4 M
    // steps, within the budget; with B·H=32 it is over, while the other algorithms stay within theirs.
    FigureRequest req = small_request();
    req.gpu = find_gpu_preset("T4");
    req.problem.d = 128;
    req.problem.heads *= 2;
    req.sweep_n = {512, 1024, 2048, 16384};
    const TileConfig t = choose_tiles(algorithm("fa1"), problem_at(req.problem, 16384), req.gpu, req.tiles);
    CHECK(t.Br == 42);
    CHECK(t.Bc == 42);
    const Algorithm& fa1 = algorithm("fa1");
    CHECK(fa1.tile_steps(problem_at(req.problem, 16384), t) ==
          req.problem.batch_heads() * ceil_div(16384, t.Br) * ceil_div(16384, t.Bc));
    CHECK(fa1.tile_steps(problem_at(req.problem, 16384), t) > fa1.tile_step_budget);
    CHECK(over_budget(fa1, problem_at(req.problem, 16384), t));
    const NSweep sweep = run_n_sweep(req);
    REQUIRE(sweep.algos[2] == &fa1);
    CHECK(sweep.over_budget[2] == std::vector<std::int64_t>{16384});
    CHECK(sweep.by_algo[2].size() == 3);
    for (std::size_t a : {0u, 1u, 3u}) {
        CHECK(sweep.over_budget[a].empty());
        CHECK(sweep.by_algo[a].size() == 4);
    }
    const Figure f = traffic_vs_n(req, sweep);
    const auto d = parse_ok(f.chart.to_svg());
    check_series_points(f, d);
    CHECK(find_series(f, "FA1 HBM")->x == std::vector<double>{512, 1024, 2048});
    CHECK(find_series(f, "FA2 HBM")->x.size() == 4);
    CHECK(contains(caption_text(d), "Left out"));
    CHECK(contains(caption_text(d), "FA1 at N=16384"));
    REQUIRE(f.notes.size() == 1);
    // The defaults at N=65536 stay within the budget.
    const FigureRequest def;
    for (const Algorithm* a : training_algorithms()) {
        const AttentionProblem p = problem_at(def.problem, 65536);
        CHECK_FALSE(over_budget(*a, p, choose_tiles(*a, p, def.gpu, def.tiles)));
    }
}

TEST_CASE("traffic_vs_n marks where standard attention stops fitting in HBM", "[figures]") {
    FigureRequest req = small_request();
    req.gpu.hbm_bytes = std::int64_t{1} << 30;  // a 1 GiB GPU: S and P (2·16·N²·2 B) exceed it between 2k and 4k
    const NSweep sweep = run_n_sweep(req);
    const auto n = standard_hbm_limit_n(sweep, req.gpu);
    REQUIRE(n);
    CHECK(*n > 2048);
    CHECK(*n < 4096);
    CHECK(*n == Approx(std::sqrt((1 << 30) / 64.0)).epsilon(0.03));  // S and P dominate: 64·N² bytes
    const Figure f = traffic_vs_n(req, sweep);
    const auto d = parse_ok(f.chart.to_svg());
    REQUIRE(d.with_class("marker-label").size() == 1);
    CHECK(contains(d.with_class("marker-label").front()->text, "exceed 1 GiB of HBM"));
    CHECK(contains(caption_text(d), "no longer fit"));
}

TEST_CASE("tensor_bars: one bar per algorithm and level, stacks only for tensors present", "[figures]") {
    const FigureRequest req = small_request();
    const auto& rs = small_chosen();
    const Figure f = tensor_bars(req, rs);
    const auto d = parse_ok(f.chart.to_svg());
    check_marks_inside(d, true);
    REQUIRE(f.bars.categories.size() == 2 * rs.size());
    CHECK(f.bars.categories.front() == "standard HBM");
    CHECK(f.bars.categories[1] == "standard DRAM");
    // All ten appear across the four algorithms (fp16: FA1's running O is the fp32 O_acc).
    const std::vector<std::string> expected = {"Q", "K", "V", "O", "O_acc", "S", "P", "m", "\u2113", "LSE"};
    CHECK(f.bars.stacks == expected);
    for (std::size_t s = 0; s < f.bars.stacks.size(); ++s)
        CHECK(d.count_attr("data-series", std::to_string(s)) == f.bars.categories.size());
    // The stacks add up to the totals the simulator reports.
    for (std::size_t a = 0; a < rs.size(); ++a) {
        double hbm = 0, dram = 0;
        for (const auto& row : f.bars.values) {
            hbm += row[2 * a];
            dram += row[2 * a + 1];
        }
        CHECK(hbm == static_cast<double>(rs[a].hbm.total()));
        CHECK(dram == static_cast<double>(rs[a].dram.total()));
    }
    // FA2 alone: no S, P, m, ℓ.
    const Figure only = tensor_bars(req, {result_of(rs, &algorithm("fa2"))});
    CHECK(only.bars.stacks == std::vector<std::string>{"Q", "K", "V", "O", "LSE"});
    CHECK(contains(caption_text(d), "N=4096"));
}

TEST_CASE("roofline: each algorithm at its intensity, DRAM points under the roof", "[figures]") {
    const FigureRequest req = small_request();
    const auto& rs = small_chosen();
    const Figure f = roofline(req, rs);
    const auto d = parse_ok(f.chart.to_svg());
    check_series_points(f, d);
    check_marks_inside(d);
    const double peak = req.gpu.matmul_flops(DType::fp16), bw = req.gpu.effective_hbm_bandwidth();
    const SeriesData* roof = find_series(f, "roofline");
    REQUIRE(roof);
    CHECK(roof->reference);
    CHECK(roof->y[1] == peak);
    CHECK(roof->x[1] == Approx(peak / bw));
    for (const AlgorithmResult& r : rs) {
        const std::string label = r.algo->id == "fa1" ? "FA1" : r.algo->id == "fa2" ? "FA2" : std::string(r.algo->id);
        const SeriesData* h = find_series(f, label + ", HBM bytes");
        const SeriesData* m = find_series(f, label + ", DRAM bytes");
        REQUIRE(h);
        REQUIRE(m);
        CHECK(h->x.size() == 1);
        CHECK(h->x[0] == Approx(r.arithmetic_intensity()));
        CHECK(h->y[0] == Approx(r.achieved_flops()));
        // Time >= DRAM bytes / bandwidth and >= matmul FLOPs / peak: the DRAM point is under the roof.
        CHECK(m->y[0] <= std::min(peak, bw * m->x[0]) * (1 + 1e-9));
        CHECK(m->x[0] >= h->x[0]);  // L2 only removes bytes
    }
}

TEST_CASE("block_size_sweep: traffic falls with block size, sizes that do not fit are left out", "[figures]") {
    const FigureRequest req = small_request();
    const BlockSizeSweep s = run_block_size_sweep(req);
    REQUIRE(s.algos == std::vector<const Algorithm*>{&algorithm("fa1"), &algorithm("fa2")});
    CHECK(s.fixed_br == std::vector<std::int64_t>{64, 0});
    const auto figs = block_size_sweep(req, s);
    REQUIRE(figs.size() == 2);
    CHECK(figs[0].name == "block_size_sweep_hbm");
    CHECK(figs[1].name == "block_size_sweep_time");
    for (const Figure& f : figs) {
        CAPTURE(f.name);
        const auto d = parse_ok(f.chart.to_svg());
        check_series_points(f, d);
        check_marks_inside(d);
        REQUIRE(f.series.size() == 2);
        CHECK(f.series[0].x.size() == s.points[0].size());
    }
    for (const auto& pts : s.points) {
        REQUIRE(pts.size() == 5);  // all of 16..256 fit in the A100's 163 KiB at d=64, fp16
        for (std::size_t i = 1; i < pts.size(); ++i) CHECK(pts[i].result.hbm.total() < pts[i - 1].result.hbm.total());
    }
    CHECK(s.points[0][2].result.tiles.Br == 64);
    CHECK(s.points[0][2].result.tiles.Bc == 64);
    CHECK(s.points[1][4].result.tiles.Br == 256);

    // T4: 64 KiB of shared memory per block. FA2 256x256 (96 KiB) does not fit; FA1 with
    // its default Br fits no Bc from 16 up (its fp32 split-K exchange buffer alone is 4·Br·d·4 B).
    FigureRequest t4 = small_request();
    t4.gpu = find_gpu_preset("T4");
    const BlockSizeSweep st = run_block_size_sweep(t4);
    REQUIRE(st.skipped.size() == 2);
    CHECK(std::find(st.skipped[1].begin(), st.skipped[1].end(), 256) != st.skipped[1].end());
    CHECK(st.points[0].size() + st.skipped[0].size() == 5);
    CHECK(st.points[1].size() + st.skipped[1].size() == 5);
    const auto tf = block_size_sweep(t4, st);
    REQUIRE(tf.size() == 2);
    const SeriesData* fa2 = find_series(tf[0], "FA2 (Br = Bc)");
    REQUIRE(fa2);
    CHECK(fa2->x.size() == st.points[1].size());
    CHECK(tf[0].series.size() == (st.points[0].empty() ? 1u : 2u));
    const auto d = parse_ok(tf[0].chart.to_svg());
    CHECK(contains(caption_text(d), "Left out"));
    CHECK(!tf[0].notes.empty());

    // Without FA1 or FA2 there is nothing to draw.
    FigureRequest std_only = small_request();
    std_only.algos = {&algorithm("standard")};
    CHECK(block_size_sweep(std_only, run_block_size_sweep(std_only)).empty());
}

TEST_CASE("occupancy_timeline: one segment per scheduled block, idle SMs as empty rows", "[figures]") {
    const FigureRequest req = small_request();  // A100, B·H = 16
    const auto& rs = small_chosen();
    for (const Algorithm* a : {&algorithm("fa1"), &algorithm("fa2")}) {
        const AlgorithmResult& r = result_of(rs, a);
        const Figure f = occupancy_timeline(req, r);
        const KernelTiming& t = r.longest_kernel();
        const auto d = parse_ok(f.chart.to_svg());
        check_marks_inside(d, true);
        INFO(f.name);
        REQUIRE(!t.timeline.empty());
        CHECK(f.timeline.segments.size() == t.timeline.size());
        std::size_t marks = 0;
        for (std::size_t c = 0; c < f.timeline.categories.size(); ++c)
            marks += d.count_attr("data-series", std::to_string(c));
        CHECK(marks == t.timeline.size());
        const int bps = std::max(1, r.kernels.at(static_cast<std::size_t>(&t - r.timing.data())).occupancy.blocks_per_sm);
        CHECK(f.timeline.rows.size() == static_cast<std::size_t>(108 * bps));
        std::set<std::size_t> busy_sms;
        for (const auto& s : f.timeline.segments) busy_sms.insert(s.row / static_cast<std::size_t>(bps));
        const std::string cap = caption_text(d);
        if (a->id == "fa1") {
            CHECK(t.grid == 16);  // one block per batch·head
            CHECK(busy_sms.size() == 16);
            CHECK(108 - busy_sms.size() == 92);
            CHECK(contains(cap, "92 of 108 SMs idle"));
        } else {
            CHECK(t.grid == 16 * 32);
            CHECK(busy_sms.size() == 108);
            CHECK(contains(cap, "No SM idle"));
        }
    }
}

TEST_CASE("measured results: a valid file is read, malformed ones name the field", "[figures][measured]") {
    const MeasuredResults m = parse_measured_results(measured_json(kGoodRecord), "m.json");
    REQUIRE(m.results.size() == 1);
    CHECK(m.gpu == "H200");
    CHECK(m.driver == "580.65");
    CHECK(m.results[0].algo == &algorithm("fa2"));
    CHECK(m.results[0].N == 4096);
    CHECK(m.results[0].Nk == 4096);
    CHECK(m.results[0].measured_s == 3.3e-4);

    auto error_of = [](const std::string& text) -> std::string {
        try {
            parse_measured_results(text, "bad.json");
        } catch (const UsageError& e) {
            return e.what();
        }
        return "no error";
    };
    struct Case {
        std::string text, must_contain;
    };
    std::string negative = kGoodRecord;
    negative.replace(negative.find("3.3e-4"), 6, "-1");
    std::string no_algo = kGoodRecord;
    no_algo.replace(no_algo.find(R"("algo": "fa2", )"), 15, "");
    std::string bad_dtype = kGoodRecord;
    bad_dtype.replace(bad_dtype.find("fp16"), 4, "fp8");
    std::string str_n = kGoodRecord;
    str_n.replace(str_n.find("4096"), 4, "\"4096\"");
    std::string bad_d = kGoodRecord;
    bad_d.replace(bad_d.find("\"d\": 64"), 7, "\"d\": 65");
    const std::vector<Case> cases = {
        {"{not json", "not valid JSON"},
        {"[1, 2]", "not an object"},
        {R"({"schema_version": 2, "gpu": "H200", "results": []})", "schema_version"},
        {R"({"schema_version": 1, "results": []})", "gpu is missing"},
        {R"({"schema_version": 1, "gpu": "H200", "results": {}})", "results"},
        {R"({"schema_version": 1, "gpu": "H200", "results": []})", "results is empty"},
        {measured_json(std::string(kGoodRecord) + ", " + negative), "results[1].measured_s = -1"},
        {measured_json(no_algo), "results[0].algo is missing"},
        {measured_json(bad_dtype), "results[0].dtype = \"fp8\""},
        {measured_json(str_n), "results[0].N = \"4096\" is not an integer"},
        {measured_json(bad_d), "results[0].d = 65"},
        {measured_json("42"), "results[0]"},
        {measured_json(R"({"algo": "standard_cublas", "N": 64, "d": 64, "dtype": "fp16", "causal": false,
                          "batch": 1, "heads": 1, "measured_s": 1e-5, "predicted_s": 1e-5})"),
         "results[0].algo = \"standard_cublas\" is not a simulator algorithm"},
        {measured_json(R"({"algo": "mine", "sim_algo": "fa3", "N": 64, "d": 64, "dtype": "fp16", "causal": false,
                          "batch": 1, "heads": 1, "measured_s": 1e-5, "predicted_s": 1e-5})"),
         "results[0].sim_algo = \"fa3\""},
        {measured_json(R"({"algo": "fa2", "N": 64, "d": 64, "dtype": "fp16", "causal": false, "batch": 1,
                          "heads": 1, "error": "launch failed"})"),
         "no entry with a measurement"},
    };
    for (const Case& c : cases) {
        const std::string msg = error_of(c.text);
        INFO(c.text << "\n -> " << msg);
        CHECK(contains(msg, c.must_contain));
        CHECK(contains(msg, "bad.json"));
        CHECK(contains(msg, "Fix:"));
    }
    CHECK_THROWS_AS(read_measured_results("/nonexistent/measured.json"), UsageError);

    // fa-validate's form: a kernel name with the simulator algorithm beside it; failed runs left out.
    const MeasuredResults v = parse_measured_results(
        measured_json(std::string(kGoodRecord) +
                      R"(, {"algo": "standard_cublas", "sim_algo": "standard", "N": 1024, "Nk": 1024, "d": 128,
                           "dtype": "bf16", "causal": true, "batch": 2, "heads": 8, "measured_s": 2e-4,
                           "predicted_s": 3e-4, "accuracy": {"pass": true}},
                         {"algo": "fa1", "sim_algo": "fa1", "N": 2048, "d": 64, "dtype": "fp32", "causal": false,
                          "batch": 2, "heads": 8, "error": "out of shared memory"})"),
        "v.json");
    REQUIRE(v.results.size() == 2);
    CHECK(v.results[1].kernel == "standard_cublas");
    CHECK(v.results[1].algo == &algorithm("standard"));
    CHECK(v.results[1].dtype == DType::bf16);
    CHECK(v.results[1].causal);
    REQUIRE(v.failed.size() == 1);
    CHECK(contains(v.failed[0], "out of shared memory"));
    const Figure f = predicted_vs_measured(FigureRequest(), v);
    REQUIRE(f.series.size() == 2);
    CHECK(f.series[0].name == "standard_cublas (vs standard)");
    CHECK(f.series[1].name == "FA2");
    const auto d = parse_ok(f.chart.to_svg());
    check_series_points(f, d);
    CHECK(contains(caption_text(d), "1 entries whose run failed"));
}

TEST_CASE("the committed fa-validate results read and plot", "[figures][measured]") {
    std::vector<fs::path> files;
    const fs::path results = fs::path(FASIM_SOURCE_DIR) / "cuda" / "results";
    if (fs::is_directory(results))
        for (const auto& dir : fs::directory_iterator(results))
            if (dir.is_directory())
                for (const auto& e : fs::directory_iterator(dir.path()))
                    if (e.path().filename().string().rfind("validate", 0) == 0 && e.path().extension() == ".json")
                        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    if (files.empty()) WARN("no cuda/results/*/validate*.json to read");
    for (const fs::path& p : files) {
        INFO(p.string());
        MeasuredResults m;
        REQUIRE_NOTHROW(m = read_measured_results(p.string()));
        CHECK(!m.results.empty());
        const Figure f = predicted_vs_measured(FigureRequest(), m);
        const auto d = parse_ok(f.chart.to_svg());
        check_series_points(f, d);
        check_marks_inside(d);
        std::size_t points = 0, unrecorded = 0;
        for (const auto& s : f.series) points += s.x.size();
        for (const auto& r : m.results) unrecorded += r.predicted_s ? 0 : 1;  // the run's fa-sim could not predict them
        CHECK(points <= m.results.size());
        CHECK(points + unrecorded >= m.results.size());
    }
}

TEST_CASE("write_figures: SVG (and PNG) for every figure, predicted_vs_measured only with a file", "[figures][write]") {
    TempDir dir("write");
    FigureRequest req = small_request();
    req.sweep_n = {512, 1024};

    std::vector<std::string> notes;
    const auto paths = write_figures(dir.path.string(), req, &notes);
    std::set<std::string> svgs;
    for (const auto& p : paths) {
        CHECK(fs::exists(p));
        if (fs::path(p).extension() == ".svg") {
            svgs.insert(fs::path(p).stem().string());
            parse_ok(read_file(p));
        }
    }
    const std::set<std::string> expected = {"traffic_vs_n",           "tensor_bars",          "roofline",
                                            "block_size_sweep_hbm",   "block_size_sweep_time", "occupancy_timeline_fa1",
                                            "occupancy_timeline_fa2", "decode_time_vs_context", "decode_sm_busy_vs_context"};
    CHECK(svgs == expected);
    bool noted = false;
    for (const auto& n : notes) noted = noted || contains(n, "predicted_vs_measured");
    CHECK(noted);
    const bool have_converter = plot::find_executable("rsvg-convert", std::getenv("PATH") ? std::getenv("PATH") : "").has_value();
    if (have_converter) CHECK(paths.size() == 2 * expected.size());
    CHECK(!fs::exists(dir.path / "predicted_vs_measured.svg"));

    // The rest checks SVGs only.
    req.png = false;
    // A path that does not exist is an error (issue 25: it was a note and exit code 0), before any simulation.
    req.measured_path = (dir.path / "missing.json").string();
    try {
        write_figures(dir.path.string(), req);
        FAIL("no error for a missing measured file");
    } catch (const UsageError& e) {
        CHECK(contains(e.what(), "missing.json does not exist"));
        CHECK(contains(e.what(), "Fix:"));
    }
    CHECK(!fs::exists(dir.path / "predicted_vs_measured.svg"));
    CHECK(!fs::exists(dir.path / "predicted_vs_measured.png"));

    // A small valid file: the figure appears, one point per entry.
    const fs::path good = dir.path / "measured.json";
    std::string two = kGoodRecord;
    two.replace(two.find("\"fa2\""), 5, "\"fa1\"");
    write_file(good, measured_json(std::string(kGoodRecord) + ", " + two));
    req.measured_path = good.string();
    const auto with = write_figures(dir.path.string(), req);
    const fs::path pvm = dir.path / "predicted_vs_measured.svg";
    REQUIRE(fs::exists(pvm));
    CHECK(std::find(with.begin(), with.end(), pvm.string()) != with.end());
    const auto d = parse_ok(read_file(pvm));
    CHECK(d.count_attr("data-series", "0") == 1);
    CHECK(d.count_attr("data-series", "1") == 1);
    CHECK(d.with_class("identity-band").size() == 1);
    check_marks_inside(d);
    const Figure f = predicted_vs_measured(req, read_measured_results(good.string()));
    check_series_points(f, parse_ok(f.chart.to_svg()));
    CHECK(contains(caption_text(d), "2 of 2 within"));

    // A malformed file is an error that names the field.
    write_file(good, measured_json(R"({"algo": "fa2"})"));
    try {
        write_figures(dir.path.string(), req);
        FAIL("no error for a malformed measured file");
    } catch (const UsageError& e) {
        CHECK(contains(e.what(), "results[0].N is missing"));
    }
}

TEST_CASE("write_figures without a PNG converter writes SVG only and says so once", "[figures][write]") {
    TempDir dir("nopng");
    FigureRequest req = small_request();
    req.sweep_n = {512};
    const char* old_path = std::getenv("PATH");
    const std::string saved = old_path ? old_path : "";
    ::setenv("PATH", (dir.path / "no-such-bin").c_str(), 1);
    std::vector<std::string> notes;
    std::vector<std::string> paths;
    try {
        paths = write_figures(dir.path.string(), req, &notes);
    } catch (...) {
        ::setenv("PATH", saved.c_str(), 1);
        throw;
    }
    ::setenv("PATH", saved.c_str(), 1);
    CHECK(paths.size() == 9);
    for (const auto& p : paths) CHECK(fs::path(p).extension() == ".svg");
    std::size_t said = 0;
    for (const auto& n : notes) said += contains(n, "only SVG written") ? 1 : 0;
    CHECK(said == 1);
}

TEST_CASE("write_figures into a missing directory is the plot library's error", "[figures][write]") {
    FigureRequest req = small_request();
    req.sweep_n = {512};
    const std::string missing = (fs::path(FASIM_BINARY_DIR) / "test-figures-no-such-dir" / "deeper").string();
    try {
        write_figures(missing, req);
        FAIL("no error for a missing directory");
    } catch (const UsageError& e) {
        CHECK(contains(e.what(), "test-figures-no-such-dir"));
    }
    CHECK(!fs::exists(missing));
}

TEST_CASE("figures are deterministic and match the committed golden SVG", "[figures][golden]") {
    // One fixed small configuration: A100, B=1, H=2, d=64, fp16, N = 256..2048, HBM shrunk to
    // 16 MiB so that the "exceeds HBM" marker appears (between N=1k and 2k).
    FigureRequest req;
    req.problem.heads = 2;
    req.problem.N = req.problem.Nk = 1024;
    req.sweep_n = {256, 512, 1024, 2048};
    req.gpu.hbm_bytes = std::int64_t{16} << 20;
    const std::string svg = traffic_vs_n(req, run_n_sweep(req)).chart.to_svg();
    CHECK(svg == traffic_vs_n(req, run_n_sweep(req)).chart.to_svg());
    parse_ok(svg);

    const fs::path golden = fs::path(FASIM_FIGURES_GOLDEN_DIR) / "traffic_vs_n.svg";
    const char* update = std::getenv("FASIM_UPDATE_GOLDEN");
    if (update && std::string(update) == "1") {
        write_file(golden, svg);
        WARN("rewrote " << golden.string());
        return;
    }
    REQUIRE(fs::exists(golden));
    const std::string want = read_file(golden);
    INFO("golden " << golden.string() << " differs; if the change is intended, regenerate it with "
                   "FASIM_UPDATE_GOLDEN=1 (docs/figures.md)");
    CHECK(svg == want);
}

TEST_CASE("progress: silent unless enabled and slow, finishes its line", "[figures][progress]") {
    SECTION("disabled: nothing") {
        std::ostringstream out;
        {
            Progress p("work", 3, false, &out, std::chrono::milliseconds(0));
            p.tick();
            p.tick();
            p.tick();
        }
        CHECK(out.str().empty());
    }
    SECTION("enabled but quick: nothing") {
        std::ostringstream out;
        {
            Progress p("work", 3, true, &out, std::chrono::milliseconds(60000));
            for (int i = 0; i < 3; ++i) p.tick();
            CHECK(!p.shown());
        }
        CHECK(out.str().empty());
    }
    SECTION("enabled and past the delay: a bar, then a newline") {
        std::ostringstream out;
        Progress p("work", 4, true, &out, std::chrono::milliseconds(0));
        for (int i = 0; i < 4; ++i) p.tick();
        CHECK(p.shown());
        const std::string s = out.str();
        CHECK(contains(s, "\rwork ["));
        CHECK(contains(s, "] 4/4"));
        CHECK(s.back() == '\n');
        CHECK(std::count(s.begin(), s.end(), '\n') == 1);
        p.finish();  // idempotent
        const std::string after = out.str();
        CHECK(std::count(after.begin(), after.end(), '\n') == 1);
    }
    SECTION("stopped early: the destructor ends the line") {
        std::ostringstream out;
        {
            Progress p("work", 10, true, &out, std::chrono::milliseconds(0));
            p.tick();
        }
        CHECK(out.str().back() == '\n');
    }
    CHECK(Progress::render("x", 2, 4, 8) == "x [####....] 2/4");
    CHECK(Progress::render("x", 0, 0, 4) == "x [####] 0/0");
}

TEST_CASE("decode figures: FA2 leaves SMs idle at every cache length, FlashDecoding nears K and V read once", "[figures][decode]") {
    FigureRequest req = small_request();
    req.gpu = find_gpu_preset("H100-SXM");
    const ContextSweep sweep = run_context_sweep(req);
    REQUIRE(sweep.problem.N == 1);  // the training problem's decode step
    const std::vector<Figure> figs = decode_vs_context(req, sweep);
    REQUIRE(figs.size() == 2);
    for (const Figure& f : figs) {
        CAPTURE(f.name);
        const auto d = parse_ok(f.chart.to_svg());
        check_series_points(f, d);
        check_marks_inside(d);
    }
    const SeriesData* once = find_series(figs[0], "K and V read once at 3.35 TB/s");
    const SeriesData *fa2 = find_series(figs[0], "FA2"), *fd = find_series(figs[0], "FlashDec");
    const SeriesData *fa2_busy = find_series(figs[1], "FA2"), *fd_busy = find_series(figs[1], "FlashDec");
    REQUIRE((once && fa2 && fd && fa2_busy && fd_busy));
    REQUIRE(fd->x.size() == default_sweep_context().size());
    CHECK(fd->x.back() == 262144.0);
    const double blocks = static_cast<double>(sweep.by_algo[0].front().kernels.front().desc.grid());
    for (std::size_t i = 0; i < fd->x.size(); ++i) {
        CAPTURE(fd->x[i]);
        CHECK(fd->y[i] < fa2->y[i]);                 // splitting the keys never loses on a decode step
        CHECK(fd->y[i] >= once->y[i]);               // nothing beats reading K and V once
        CHECK(fa2_busy->y[i] <= blocks / 132 + 1e-9);  // FA2's blocks cover at most that share of the SMs
        CHECK(fd_busy->y[i] > 0.8);
    }
    // At 256k keys FlashDecoding is within 25% of the bound: with one query row a block has one computing
    // warp, whose softmax over 128-key tiles (d = 64) issues a little longer than the HBM streams them.
    CHECK(fd->y.back() < 1.25 * once->y.back());
    CHECK(contains(caption_text(parse_ok(figs[0].chart.to_svg())), "faster"));
}

TEST_CASE("measured results: numbers beyond a double, deep nesting and control characters are refused on one line", "[figures][measured][hardening]") {
    // A number that overflows a double was nlohmann's out_of_range, not a parse_error: "internal error", exit code 1.
    for (const std::string& text : {measured_json(R"({"algo": "fa2", "N": 1e999})"), std::string("[1e999]"),
                                    "{\"results\": " + std::string(100000, '[') + std::string(100000, ']') + "}"}) {
        try {
            parse_measured_results(text, "m.json");
            FAIL("no error");
        } catch (const UsageError& e) {
            const std::string m = e.what();
            CHECK(m.find('\n') == std::string::npos);
            CHECK(contains(m, "Fix:"));
        }
    }
    try {
        parse_measured_results(measured_json(R"({"algo": "k", "sim_algo": "fa2\n\u001b"})"), "m.json");
        FAIL("no error");
    } catch (const UsageError& e) {
        CHECK(contains(e.what(), "fa2\\n\\x1b"));
    }
}

// ---- Training figures: fa-sim --plot --pass bwd|fwd+bwd ----

TEST_CASE("training figures: memory held between passes grows as N^2 for standard and N for flash, FLOPs with "
          "recomputation, fwd+bwd traffic",
          "[figures][backward]") {
    FigureRequest req = small_request();
    req.algos = {&algorithm("standard"), &algorithm("fa1"), &algorithm("fa2")};
    req.sweep_n = {1024, 2048, 4096};
    req.problem.N = req.problem.Nk = 1024;
    req.pass = PassSelection::fwd_bwd;
    const NSweep sweep = run_n_sweep(req);
    const std::vector<Figure> figs = training_figures(req, sweep, run_chosen(req));
    std::vector<std::string> names;
    for (const Figure& f : figs) {
        names.push_back(f.name);
        parse_ok(f.chart.to_svg());
    }
    CHECK(names == std::vector<std::string>{"traffic_vs_n_fwd_bwd", "tensor_bars_fwd_bwd", "held_memory_vs_n_fwd_bwd",
                                            "flops_vs_n_fwd_bwd"});

    const Figure& held = figs[2];
    REQUIRE(held.series.size() == 4);  // three algorithms and the GPU's HBM
    for (std::size_t a = 0; a < 3; ++a) {
        const SeriesData& s = held.series[a];
        CAPTURE(s.name);
        REQUIRE(s.y.size() == 3);
        const double per_doubling = a == 0 ? 4 : 2;  // P: B·H·N² elements; m, ℓ or LSE: B·H·N
        CHECK(s.y[1] == per_doubling * s.y[0]);
        CHECK(s.y[2] == per_doubling * s.y[1]);
    }
    CHECK(held.series[0].y[0] == 16.0 * 1024 * 1024 * 2);  // standard's P in fp16
    CHECK(held.series[2].y[0] == 16.0 * 1024 * 4);         // FA2's LSE in fp32

    // FLOPs: standard 4 + 8 per pair, nothing recomputed; FA1 and FA2 4 + 10, S recomputed (2).
    const Figure& flops = figs[3];
    std::map<std::string, std::vector<double>> by_name;
    for (const SeriesData& s : flops.series) by_name[s.name] = s.y;
    CHECK(by_name.count("standard of them recomputed") == 0);
    for (std::size_t k = 0; k < 3; ++k) {
        const double unit = 16.0 * static_cast<double>(req.sweep_n[k]) * static_cast<double>(req.sweep_n[k]) * 64;
        CHECK(by_name["standard matmul"][k] == 12 * unit);
        CHECK(by_name["FA2 matmul"][k] == 14 * unit);
        CHECK(by_name["FA2 of them recomputed"][k] == 2 * unit);
        CHECK(by_name["FA1 of them recomputed"][k] == 2 * unit);
    }

    // Traffic: every point the sum of both passes, the dashed closed forms both passes' leading terms.
    const Figure& traffic = figs[0];
    for (const SeriesData& s : traffic.series)
        if (s.name == "FA2 HBM")
            for (std::size_t k = 0; k < s.x.size(); ++k) {
                const AttentionProblem p = problem_at(req.problem, static_cast<std::int64_t>(s.x[k]));
                const auto both = simulate(algorithm("fa2"), PassSelection::fwd_bwd, p, req.gpu, req.tiles, req.model);
                CHECK(s.y[k] == static_cast<double>(both.hbm.total()));
            }
    bool closed = false;  // FA2's dashed line: the forward's leading term plus the backward's
    for (const SeriesData& s : traffic.series)
        if (s.name == "FA2 closed form") {
            closed = true;
            const auto both = simulate(algorithm("fa2"), PassSelection::fwd_bwd, problem_at(req.problem, 4096), req.gpu, req.tiles);
            const double expect = *algorithm("fa2").closed_form(both.problem, *both.forward_tiles).leading_hbm_bytes +
                                  *algorithm("fa2_bwd").closed_form(both.problem, both.tiles).leading_hbm_bytes;
            CHECK(s.y.back() == Approx(expect).epsilon(1e-12));
        }
    CHECK(closed);
}

TEST_CASE("write_figures with --pass bwd writes the training figures only, named with the pass", "[figures][write][backward]") {
    TempDir dir("write-bwd");
    FigureRequest req = small_request();
    req.sweep_n = {512, 1024};
    req.algos = {&algorithm("standard"), &algorithm("fa2")};
    req.pass = PassSelection::bwd;
    req.png = false;
    std::vector<std::string> notes;
    std::set<std::string> stems;
    for (const auto& p : write_figures(dir.path.string(), req, &notes)) stems.insert(fs::path(p).stem().string());
    CHECK(stems == std::set<std::string>{"traffic_vs_n_bwd", "tensor_bars_bwd", "held_memory_vs_n_bwd", "flops_vs_n_bwd"});
    CHECK(std::any_of(notes.begin(), notes.end(), [](const std::string& n) { return contains(n, "forward pass only"); }));
}
