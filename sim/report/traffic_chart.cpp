#include "report/traffic_chart.hpp"

#include <algorithm>
#include <ostream>
#include <string>

#include "plot/terminal_bars.hpp"
#include "report/report.hpp"
#include "report/units.hpp"

namespace fasim {

void print_traffic_chart(std::ostream& out, const AlgorithmResult& r, const ReportStyle& style) {
    std::vector<plot::TerminalBar> bars;
    // Tensor names are padded to the longest one shown (O_acc, FA1's fp32 running O, is five letters).
    std::size_t label_width = 3;
    for (const TensorBytes& t : r.hbm.tensors)
        if (t.total() > 0) label_width = std::max(label_width, t.name.size());
    for (const TensorBytes& t : r.hbm.tensors) {
        const double hbm = static_cast<double>(t.total());
        const double dram = static_cast<double>(read_of(r.dram, t.name) + write_of(r.dram, t.name));
        if (hbm == 0) continue;
        std::string name = t.name;
        name.resize(label_width + 1, ' ');
        bars.emplace_back(name + "HBM ", hbm, units::bytes(hbm));
        bars.emplace_back(std::string(label_width + 1, ' ') + "DRAM", dram, units::bytes(dram));
    }
    plot::TerminalBarsOptions opts;
    opts.width = style.width;
    opts.unicode = style.unicode;
    opts.title = "Traffic per tensor (read+write): HBM as the algorithm requests it, DRAM after L2";
    out << plot::terminal_bars(bars, opts);
}

}  // namespace fasim
