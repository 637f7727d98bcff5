#include "grading.hpp"

#include <cmath>
#include <exception>
#include <iomanip>
#include <set>
#include <sstream>

#include "attention_backward.hpp"
#include "exec/counting_executor.hpp"
#include "exec/functional_executor.hpp"
#include "exec/problem_inputs.hpp"
#include "gpu/gpu_catalog.hpp"
#include "precision.hpp"

namespace fasim::course {

double Grade::score() const {
    double s = 0;
    for (const GradedTest& t : tests) s += t.score;
    return s;
}

double Grade::max_score() const {
    double s = 0;
    for (const GradedTest& t : tests) s += t.max_score;
    return s;
}

namespace {

using reference::Matrix;

// Algorithm::program is a plain function pointer: the program being graded is reached through this one.
thread_local const ProgramFn* current_program = nullptr;
void run_current(Executor& x, const AttentionProblem& p, const TileConfig& cfg) { (*current_program)(x, p, cfg); }

struct ProgramScope {
    explicit ProgramScope(const ProgramFn& f) { current_program = &f; }
    ~ProgramScope() { current_program = nullptr; }
    ProgramScope(const ProgramScope&) = delete;
    ProgramScope& operator=(const ProgramScope&) = delete;
};

// The submission as an algorithm: the reference's tiles and closed form, the student's program.
Algorithm submitted(const Algorithm& reference) {
    Algorithm a = reference;
    a.program = run_current;
    return a;
}

const GpuSpec& gpu() {
    static const GpuSpec g = find_gpu_preset("A100-SXM4-40GB");
    return g;
}

AttentionProblem problem_of(const GradedShape& s) {
    AttentionProblem p;
    p.batch = 1;
    p.heads = s.heads;
    p.kv_heads = s.kv_heads;
    p.N = s.N;
    p.Nk = s.Nk;
    p.d = kHeadDim;
    p.dtype = DType::fp16;
    p.causal = s.causal;
    return p;
}

// The tiles of one shape: Br = Bc = 16, so that every shape has several tiles each way and ragged last ones.
struct Tiles {
    TileConfig forward, program;  // forward: the tiles of the forward pass a backward reads (= program otherwise)
};
Tiles tiles_of(const Assignment& a, const GradedShape& s, const AttentionProblem& p) {
    TileRequest req;
    req.Bc = kTile;
    if (a.kind == Kind::decoding) {
        req.kv_splits = s.kv_splits;
    } else {
        req.Br = kTile;
    }
    const TileConfig program = choose_tiles(algorithm(a.reference_id), p, gpu(), req);
    if (a.kind != Kind::backward) return {program, program};
    return {choose_tiles(algorithm("fa2"), p, gpu(), req), program};
}

std::uint64_t shape_seed(std::uint64_t seed, std::size_t shape) { return seed * 1000003ULL + 7919ULL * shape; }

std::string fmt(double v) {
    std::ostringstream o;
    o << std::setprecision(3) << v;
    return o.str();
}

// The first row of a matrix holding a NaN (an element never written: the executor starts tensors as NaN); -1: none.
long first_nan_row(const Matrix& m) {
    for (Eigen::Index i = 0; i < m.rows(); ++i)
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (std::isnan(m(i, j))) return static_cast<long>(i);
    return -1;
}

GradedTest failed_to_run(std::string name, double points, const std::string& why) {
    return {std::move(name), 0, points, "your program stopped: " + why};
}

// ---- numbers: forward and decoding ------------------------------------------------------------------

void grade_forward_numbers(const Assignment& a, const Algorithm& student, std::size_t shape, std::uint64_t grade_seed,
                           std::vector<GradedTest>& out) {
    const GradedShape& s = a.shapes[shape];
    const std::uint64_t seed = shape_seed(grade_seed, shape);
    const AttentionProblem p = problem_of(s);
    const std::string o_name = "O equals exact attention: " + s.label, l_name = "LSE equals the exact log-sum-exp: " + s.label;
    const std::string inputs = "inputs: fresh random Q, K, V (fp16, d = " + std::to_string(kHeadDim) + ", " +
                               std::to_string(p.heads) + " query heads; fa-grade --seed " + std::to_string(grade_seed) + " draws them again)\n";
    const ProblemInputs in = random_inputs(p, seed, 7919);
    FunctionalRun run;
    try {
        run = run_functional(student, p, gpu(), tiles_of(a, s, p).program, in.Q, in.K, in.V);
    } catch (const std::exception& e) {
        out.push_back(failed_to_run(o_name, a.output_points[0], e.what()));
        out.push_back(failed_to_run(l_name, a.output_points[1], e.what()));
        return;
    }
    reference::AttentionOptions opt;
    opt.causal = p.causal;
    std::string o_text = inputs, l_text = inputs;
    bool o_pass = true, l_pass = !run.lse.empty();
    if (run.lse.empty()) l_text += "your program declared no tensor LSE: declare it (fused_tensors does) and store LSE_i = m_i + log l_i\n";
    for (std::int64_t h = 0; h < p.batch_heads(); ++h) {
        const auto hh = static_cast<std::size_t>(h);
        const Matrix &Q = in.Q[hh], &K = in.K_of(p, h), &V = in.V_of(p, h);
        const std::string head = "head " + std::to_string(h) + ": ";
        if (const long r = first_nan_row(run.O[hh]); r >= 0) {
            o_pass = false;
            o_text += head + "O row " + std::to_string(r) + " is NaN: your program never stored it\n";
        } else {
            const auto c = reference::check_tolerance(run.O[hh], Q, K, V, opt, p.dtype);
            o_pass = o_pass && c.pass;
            o_text += head + "max |O - O_exact| = " + fmt(c.error) + ", allowed " + fmt(c.bound) + (c.pass ? "" : "  FAIL") + "\n";
        }
        if (run.lse.empty()) continue;
        const reference::Vector& lse = run.lse[hh];
        const auto exact = reference::exact_attention(Q, K, V, opt);
        long nan_row = -1;
        for (Eigen::Index i = 0; i < lse.size() && nan_row < 0; ++i)
            if (std::isnan(lse(i))) nan_row = static_cast<long>(i);
        if (nan_row >= 0) {
            l_pass = false;
            l_text += head + "LSE row " + std::to_string(nan_row) + " is NaN: your program never stored it\n";
            continue;
        }
        const auto c = reference::check_lse(lse, Q, K, opt, exact);
        l_pass = l_pass && c.pass;
        l_text += head + "max |LSE - LSE_exact| = " + fmt(c.max_error) +
                  (c.pass ? "" : ", first wrong row " + std::to_string(c.first_bad_row) + "  FAIL") + "\n";
    }
    out.push_back({o_name, o_pass ? a.output_points[0] : 0, a.output_points[0], o_text});
    out.push_back({l_name, l_pass ? a.output_points[1] : 0, a.output_points[1], l_text});
}

// ---- numbers: backward --------------------------------------------------------------------------------

void grade_backward_numbers(const Assignment& a, const Algorithm& student, std::size_t shape, std::uint64_t grade_seed,
                            std::vector<GradedTest>& out) {
    const GradedShape& s = a.shapes[shape];
    const std::uint64_t seed = shape_seed(grade_seed, shape);
    const AttentionProblem p = problem_of(s);
    const char* names[3] = {"dQ", "dK", "dV"};
    auto name = [&](int g) { return std::string(names[g]) + " equals the float64 backward: " + s.label; };
    const ProblemInputs in = random_inputs(p, seed, 7919);
    std::vector<Matrix> dO;
    for (std::int64_t h = 0; h < p.batch_heads(); ++h)
        dO.push_back(reference::round_matrix(reference::random_normal(p.N, p.d, seed + 17 + static_cast<std::uint64_t>(h)), p.dtype));
    const Tiles t = tiles_of(a, s, p);
    BackwardRun run;
    try {  // the reference forward writes O and LSE; the submission's backward reads them
        run = run_functional_backward(algorithm("fa2"), student, p, gpu(), t.forward, t.program, in.Q, in.K, in.V, dO);
    } catch (const std::exception& e) {
        for (int g = 0; g < 3; ++g) out.push_back(failed_to_run(name(g), a.output_points[static_cast<std::size_t>(g)], e.what()));
        return;
    }
    reference::AttentionOptions opt;
    opt.causal = p.causal;
    std::string text[3];
    bool pass[3] = {true, true, true};
    for (auto& tx : text)
        tx = "inputs: fresh random Q, K, V, dO (fp16, d = " + std::to_string(kHeadDim) + "; fa-grade --seed " + std::to_string(grade_seed) +
             " draws them again); O and LSE from the reference FA2 forward\n";
    for (std::size_t h = 0; h < in.Q.size(); ++h) {
        const reference::AttentionGradients got{run.dQ[h], run.dK[h], run.dV[h]};
        const auto checks = reference::check_gradients(got, in.Q[h], in.K[h], in.V[h], dO[h], opt, p.dtype);
        const Matrix* mats[3] = {&got.dQ, &got.dK, &got.dV};
        const reference::GradientCheck* cs[3] = {&checks.dQ, &checks.dK, &checks.dV};
        for (int g = 0; g < 3; ++g) {
            const std::string head = "head " + std::to_string(h) + ": ";
            if (const long r = first_nan_row(*mats[g]); r >= 0) {
                pass[g] = false;
                text[g] += head + names[g] + " row " + std::to_string(r) + " is NaN: your program never stored it\n";
                continue;
            }
            pass[g] = pass[g] && cs[g]->pass;
            text[g] += head + "max |" + names[g] + " - exact| = " + fmt(cs[g]->error) + ", allowed " + fmt(cs[g]->bound) +
                       (cs[g]->pass ? "" : "  FAIL") + "\n";
        }
    }
    for (int g = 0; g < 3; ++g) {
        const double pts = a.output_points[static_cast<std::size_t>(g)];
        out.push_back({name(g), pass[g] ? pts : 0, pts, text[g]});
    }
}

// ---- traffic -----------------------------------------------------------------------------------------

// HBM bytes per tensor of a program's run on the counting executor (a backward: its kernels only, after
// the reference forward's).
LevelTraffic count_hbm(const Assignment& a, const Algorithm& program, const AttentionProblem& p, const Tiles& t) {
    CountingExecutor x(gpu());
    std::size_t first = 0;
    if (a.kind == Kind::backward) {
        run_algorithm(algorithm("fa2"), x, p, t.forward);
        first = x.kernels().size();
    }
    run_algorithm(program, x, p, t.program);
    LevelTraffic total;
    for (std::size_t k = first; k < x.kernels().size(); ++k) total.add_by_name(x.kernels()[k].hbm);
    return total;
}

// "K: read 8192 B (reference 8192 B), written 0 B (reference 0 B)" for every tensor either program moves.
std::string per_tensor_text(const LevelTraffic& got, const LevelTraffic& ref, bool& equal) {
    std::set<std::string> names;
    for (const auto& t : got.tensors) names.insert(t.name);
    for (const auto& t : ref.tensors) names.insert(t.name);
    std::string s;
    equal = true;
    for (const std::string& n : names) {
        const Count r = read_of(got, n), w = write_of(got, n), rr = read_of(ref, n), rw = write_of(ref, n);
        if (r == 0 && w == 0 && rr == 0 && rw == 0) continue;
        const bool same = r == rr && w == rw;
        equal = equal && same;
        s += "  " + n + ": read " + to_string(r) + " B (reference " + to_string(rr) + " B), written " + to_string(w) +
             " B (reference " + to_string(rw) + " B)" + (same ? "" : "  DIFFERS") + "\n";
    }
    return s;
}

void grade_traffic(const Assignment& a, const Algorithm& student, bool numbers_pass,
                   std::vector<GradedTest>& out) {
    const Algorithm& reference = algorithm(a.reference_id);
    GradedTest closed{"HBM traffic equals " + std::string(reference.name) + "'s closed form (shapes without causal masking)", 0,
                      a.closed_form_points, ""};
    GradedTest counts{"HBM traffic per tensor equals the reference program's (every shape)", 0, a.reference_counts_points, ""};
    if (!numbers_pass) {
        const std::string why = "not graded until every numbers test passes: traffic is only worth counting for a program "
                                "that computes attention\n";
        closed.output = counts.output = why;
        out.push_back(closed);
        out.push_back(counts);
        return;
    }
    bool closed_ok = true, counts_ok = true;
    for (const GradedShape& s : a.shapes) {
        const AttentionProblem p = problem_of(s);
        const Tiles t = tiles_of(a, s, p);
        LevelTraffic got, ref;
        try {
            got = count_hbm(a, student, p, t);
        } catch (const std::exception& e) {
            closed_ok = counts_ok = false;
            closed.output += s.label + ": your program stopped: " + e.what() + "\n";
            counts.output += s.label + ": your program stopped: " + e.what() + "\n";
            continue;
        }
        ref = count_hbm(a, reference, p, t);
        bool equal = true;
        const std::string table = per_tensor_text(got, ref, equal);
        counts_ok = counts_ok && equal;
        counts.output += s.label + (equal ? ": equal\n" : ": differs\n") + (equal ? "" : table);
        const ClosedForm f = reference.closed_form(p, t.program);
        if (!f.hbm) continue;
        const bool same = got.read_bytes() == f.hbm->read && got.write_bytes() == f.hbm->write;
        closed_ok = closed_ok && same;
        closed.output += s.label + " (Br = " + std::to_string(t.program.Br) + ", Bc = " + std::to_string(t.program.Bc) +
                         "): read " + to_string(got.read_bytes()) + " B (closed form " + to_string(f.hbm->read) +
                         " B), written " + to_string(got.write_bytes()) + " B (closed form " + to_string(f.hbm->write) +
                         " B)" + (same ? "\n" : "  DIFFERS\n" + table);
    }
    closed.score = closed_ok ? closed.max_score : 0;
    counts.score = counts_ok ? counts.max_score : 0;
    out.push_back(closed);
    out.push_back(counts);
}

}  // namespace

Grade grade(const Assignment& assignment, const ProgramFn& program, std::uint64_t seed) {
    const ProgramScope scope(program);
    const Algorithm student = submitted(algorithm(assignment.reference_id));
    Grade g{assignment.id, seed, {}};
    for (std::size_t i = 0; i < assignment.shapes.size(); ++i) {
        if (assignment.kind == Kind::backward)
            grade_backward_numbers(assignment, student, i, seed, g.tests);
        else
            grade_forward_numbers(assignment, student, i, seed, g.tests);
    }
    bool numbers_pass = true;
    for (const GradedTest& t : g.tests) numbers_pass = numbers_pass && t.passed();
    grade_traffic(assignment, student, numbers_pass, g.tests);  // traffic does not depend on the values
    return g;
}

}  // namespace fasim::course
