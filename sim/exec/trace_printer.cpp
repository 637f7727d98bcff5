#include "exec/trace_printer.hpp"

#include <cmath>
#include <cstdio>
#include <string>

namespace fasim {

namespace {

std::string num(float v) {
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    if (std::isnan(v)) return "nan";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", static_cast<double>(v));
    return buf;
}

std::string where(const Region& r) {
    const auto span = [](std::int64_t a, std::int64_t n) { return std::to_string(a) + ":" + std::to_string(a + n); };
    const std::string& name = r.tensor->name;
    if (r.tensor->row_statistic) return name + "[" + span(r.col0, r.ncols) + "]";
    return name + "[" + span(r.row0, r.nrows) + ", " + span(r.col0, r.ncols) + "]";
}

template <class Text>
std::string join(const std::vector<Text>& v, const char* sep) {
    std::string s;
    for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::string(v[i]);
    return s;
}

}  // namespace

void TracePrinter::values(const reference::MatrixF& m, const char* indent) {
    const Eigen::Index rows = std::min<Eigen::Index>(m.rows(), rows_), cols = std::min<Eigen::Index>(m.cols(), cols_);
    if (m.cols() == 1) {  // a row statistic: one value per query row
        out_ << indent << "[";
        for (Eigen::Index i = 0; i < rows; ++i) out_ << (i ? ", " : "") << num(m(i, 0));
        out_ << (m.rows() > rows ? ", ...]" : "]") << '\n';
        return;
    }
    for (Eigen::Index i = 0; i < rows; ++i) {
        out_ << indent << "[";
        for (Eigen::Index j = 0; j < cols; ++j) out_ << (j ? ", " : "") << num(m(i, j));
        out_ << (m.cols() > cols ? ", ...]" : "]") << '\n';
    }
    if (m.rows() > rows) out_ << indent << "... (" << m.rows() << " rows)\n";
}

void TracePrinter::on_step(const Step& s) {
    const std::string result(s.result);
    switch (s.kind) {
        case StepKind::kernel_begin:
            out_ << "== kernel " << s.kernel->name << ": " << s.kernel->role << " (grid " << s.kernel->grid() << " = "
                 << s.kernel->heads << " heads x " << s.kernel->blocks_per_head << ")\n";
            return;
        case StepKind::block_begin:
            out_ << "-- block " << s.block << " of head " << s.head << '\n';
            return;
        case StepKind::alloc:
        case StepKind::barrier:
            return;
        case StepKind::load:
            out_ << "   load   " << result << " <- " << where(*s.region) << '\n';
            if (s.values->cols() == 1) values(*s.values, "          ");
            return;
        case StepKind::store:
            out_ << (s.store_mode == StoreMode::overwrite    ? "   store  "
                     : s.store_mode == StoreMode::accumulate ? "   add to "
                                                              : "   atomic add ")
                 << result << " -> " << where(*s.region) << '\n';
            values(*s.values, "          ");
            return;
        case StepKind::matmul:
            out_ << "   matmul " << result << (s.accumulate ? " += " : " = ") << s.operands.at(0)
                 << (s.transpose_a ? "^T" : "") << " x " << s.operands.at(1) << (s.transpose_b ? "^T" : "") << '\n';
            return;
        case StepKind::mask:
            out_ << "   mask   " << result << " above the diagonal -> -inf\n";
            return;
        case StepKind::reduce_across_warps:
            out_ << "   warps  exchange " << result << " through shared memory (split-K)\n";
            return;
        case StepKind::round_to_storage:
            out_ << "   round  " << result << " to the storage dtype\n";
            return;
        default:
            break;
    }
    const std::string name(s.op.empty() ? step_name(s.kind) : s.op);
    // A step with only numbers for operands (scaling by the softmax scale) names them instead.
    std::vector<std::string> numbers;
    for (double x : s.numbers) numbers.push_back(num(static_cast<float>(x)));
    out_ << "   " << name << std::string(name.size() < 7 ? 7 - name.size() : 1, ' ') << result << " <- "
         << (s.operands.empty() ? join(numbers, ", ") : join(s.operands, ", ")) << '\n';
    if (s.values->cols() == 1) values(*s.values, "          ");
}

const char* step_name(StepKind k) {
    switch (k) {
        case StepKind::kernel_begin: return "kernel";
        case StepKind::block_begin: return "block";
        case StepKind::alloc: return "alloc";
        case StepKind::load: return "load";
        case StepKind::store: return "store";
        case StepKind::stage: return "stage";
        case StepKind::matmul: return "matmul";
        case StepKind::mask: return "mask";
        case StepKind::map: return "map";
        case StepKind::reduce_rows: return "reduce";
        case StepKind::round_to_storage: return "round";
        case StepKind::reduce_across_warps: return "warps";
        case StepKind::barrier: return "barrier";
    }
    return "?";
}

}  // namespace fasim
