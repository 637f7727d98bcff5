#include "problem/attention_problem.hpp"

#include <cmath>
#include <sstream>

#include "common/errors.hpp"

namespace fasim {

namespace {
// 4 and 8 are for tiny teaching traces; the rest are the flash-attention family's head sizes.
constexpr std::int64_t kHeadDims[] = {4, 8, 16, 32, 48, 64, 80, 96, 128, 160, 192, 256};
}

double AttentionProblem::softmax_scale() const { return 1.0 / std::sqrt(static_cast<double>(d)); }

std::string AttentionProblem::describe() const {
    std::ostringstream s;
    s << "B=" << batch << " H=" << heads;
    if (grouped()) s << " KV=" << kv_head_count();
    s << " N=" << N << " Nk=" << Nk << " d=" << d << " " << dtype_name(dtype) << (causal ? " causal" : " non-causal");
    return s.str();
}

bool supported_head_dim(std::int64_t d) {
    for (auto v : kHeadDims)
        if (v == d) return true;
    return false;
}

std::string supported_head_dims_text() {
    std::string s;
    for (auto v : kHeadDims) s += (s.empty() ? "" : ", ") + std::to_string(v);
    return s;
}

void validate(const AttentionProblem& p) {
    auto range = [](const char* flag, std::int64_t v, std::int64_t lo, std::int64_t hi, const std::string& fix) {
        if (v < lo || v > hi)
            throw usage_error(std::string("--") + flag + " " + std::to_string(v) + " is out of range",
                              std::string(flag) + " must be " + std::to_string(lo) + ".." + std::to_string(hi), fix);
    };
    range("N", p.N, 1, ProblemLimits::max_seq, "pass a sequence length between 1 and 16777216 (2^24)");
    range("Nk", p.Nk, 1, ProblemLimits::max_seq, "pass a key length between 1 and 16777216 (2^24), or omit --Nk for self-attention");
    const std::string max_bh = limit_text(ProblemLimits::max_batch_heads);
    range("batch", p.batch, 1, ProblemLimits::max_batch, "pass a batch size between 1 and " + max_bh);
    range("heads", p.heads, 1, ProblemLimits::max_heads, "pass a head count between 1 and " + max_bh);
    if (p.batch_heads() > ProblemLimits::max_batch_heads)
        throw usage_error("--batch " + std::to_string(p.batch) + " x --heads " + std::to_string(p.heads) + " = " +
                              std::to_string(p.batch_heads()) + " is too many",
                          "batch*heads must be at most " + max_bh + " (2^16)",
                          "lower --batch or --heads (traffic scales linearly with batch*heads)");
    if (p.kv_heads != 0 && (p.kv_heads < 1 || p.kv_heads > p.heads || p.heads % p.kv_heads != 0))
        throw usage_error("--kv-heads " + std::to_string(p.kv_heads) + " does not divide --heads " + std::to_string(p.heads),
                          "kv-heads must be a divisor of heads (1 = multi-query attention, heads = multi-head attention)",
                          "pass e.g. --kv-heads " + std::to_string(p.heads % 8 == 0 ? p.heads / 8 : 1) +
                              ", or omit --kv-heads");
    if (!supported_head_dim(p.d))
        throw usage_error("--d " + std::to_string(p.d) + " is not a supported head dimension",
                          "d must be one of " + supported_head_dims_text(),
                          "pick the nearest supported value, e.g. --d 64 or --d 128");
}

}  // namespace fasim
