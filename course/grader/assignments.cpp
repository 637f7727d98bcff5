#include "assignments.hpp"

namespace fasim::course {

double Assignment::max_score() const {
    double total = closed_form_points + reference_counts_points;
    for (double p : output_points) total += p * static_cast<double>(shapes.size());
    return total;
}

const std::vector<Assignment>& assignments() {
    // Shapes chosen so that each classic mistake fails a test of its own: N not a multiple of the tile
    // (ragged last tiles), Nq != Nk with and without causal (the bottom-right diagonal), rows that see
    // no key (causal, N > Nk), several K/V tiles per row (the running max changes).
    static const std::vector<Assignment> all = {
        {.id = "fa2_forward",
         .title = "FlashAttention-2 forward",
         .reference_id = "fa2",
         .kind = Kind::forward,
         .shapes = {{.label = "N = Nk = 64", .N = 64, .Nk = 64},
                    {.label = "ragged: N = Nk = 50", .N = 50, .Nk = 50},
                    {.label = "Nq != Nk: N = 40, Nk = 70", .N = 40, .Nk = 70},
                    {.label = "causal: N = Nk = 48", .N = 48, .Nk = 48, .causal = true},
                    {.label = "causal, Nq < Nk: N = 30, Nk = 53", .N = 30, .Nk = 53, .causal = true},
                    {.label = "causal, Nq > Nk: N = 45, Nk = 20", .N = 45, .Nk = 20, .causal = true}},
         .output_points = {8, 4},
         .closed_form_points = 16,
         .reference_counts_points = 12},
        {.id = "fa2_backward",
         .title = "FlashAttention-2 backward",
         .reference_id = "fa2_bwd",
         .kind = Kind::backward,
         .shapes = {{.label = "N = Nk = 64", .N = 64, .Nk = 64},
                    {.label = "ragged, Nq != Nk: N = 40, Nk = 57", .N = 40, .Nk = 57},
                    {.label = "causal, Nq > Nk: N = 50, Nk = 37", .N = 50, .Nk = 37, .causal = true},
                    {.label = "causal, Nq < Nk: N = 33, Nk = 70", .N = 33, .Nk = 70, .causal = true}},
         .output_points = {5, 5, 5},
         .closed_form_points = 20,
         .reference_counts_points = 20},
        {.id = "flash_decoding",
         .title = "Split-KV decoding (FlashDecoding)",
         .reference_id = "flash_decoding",
         .kind = Kind::decoding,
         .shapes = {{.label = "one query row, Nk = 300, 4 splits", .N = 1, .Nk = 300, .kv_splits = 4},
                    {.label = "MQA: 4 query heads on one K/V head, Nk = 200, 3 splits", .N = 1, .Nk = 200, .heads = 4,
                     .kv_heads = 1, .kv_splits = 3},
                    {.label = "causal: 4 query rows, Nk = 100, 2 splits", .N = 4, .Nk = 100, .causal = true, .kv_splits = 2},
                    {.label = "one split, ragged: N = 3, Nk = 77", .N = 3, .Nk = 77, .kv_splits = 1}},
         .output_points = {10, 5},
         .closed_form_points = 20,
         .reference_counts_points = 20},
    };
    return all;
}

const Assignment* find_assignment(std::string_view id) {
    for (const Assignment& a : assignments())
        if (a.id == id) return &a;
    return nullptr;
}

std::string assignment_ids() {
    std::string s;
    for (const Assignment& a : assignments()) s += (s.empty() ? "" : ", ") + a.id;
    return s;
}

}  // namespace fasim::course
