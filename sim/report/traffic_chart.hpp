// The compact bar chart of the default report: bytes per tensor at each level,
// so the first run already shows which tensors dominate and what L2 absorbs.
#pragma once

#include <iosfwd>

#include "model/simulation.hpp"

namespace fasim {

struct ReportStyle;
void print_traffic_chart(std::ostream& out, const AlgorithmResult& r, const ReportStyle& style);

}  // namespace fasim
