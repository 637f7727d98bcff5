// The three assignments, as the grader runs them: which registered algorithm is the reference (its
// closed form and its program's counts are what a submission's traffic is checked against), the
// problems a submission runs on and the points of each test. One table, so that the handouts
// (docs/assignments/) and `fa-grade --list` say the same.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fasim::course {

// One problem a submission is graded on (d = 16, fp16 storage, batch 1).
struct GradedShape {
    std::string label;  // "Nq != Nk: N = 40, Nk = 70"
    std::int64_t N = 0, Nk = 0;
    std::int64_t heads = 2, kv_heads = 0;  // kv_heads 0: one K/V head per query head
    bool causal = false;
    std::int64_t kv_splits = 0;  // split-KV decoding only
};

enum class Kind : std::uint8_t { forward, backward, decoding };

struct Assignment {
    std::string id;            // what FASIM_SUBMISSION and --assignment name: "fa2_forward"
    std::string title;
    std::string reference_id;  // the registered algorithm it re-implements: "fa2", "fa2_bwd", "flash_decoding"
    Kind kind = Kind::forward;
    std::vector<GradedShape> shapes;
    // Points: per shape, for each output checked against float64 (forward and decoding: O, then LSE;
    // backward: dQ, dK, dV); then the two traffic tests.
    std::vector<double> output_points;
    double closed_form_points = 0, reference_counts_points = 0;
    double max_score() const;
};

inline constexpr std::int64_t kHeadDim = 16;
inline constexpr std::int64_t kTile = 16;  // Br = Bc = 16 (decoding: Bc = 16, Br its kernel's 64)

const std::vector<Assignment>& assignments();
const Assignment* find_assignment(std::string_view id);  // nullptr when there is none
std::string assignment_ids();                            // "fa2_forward, fa2_backward, flash_decoding"

}  // namespace fasim::course
