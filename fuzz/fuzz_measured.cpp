// libFuzzer target: the measured-results reader (parse_measured_results, what --measured reads). An
// accepted file has finite, positive times; when it is small, the predicted-vs-measured figure is drawn
// from it (the current simulator's prediction for each entry) and must hold finite numbers only.
#include <cstddef>
#include <cstdint>
#include <string>

#include "contract.hpp"
#include "figures/figures.hpp"
#include "figures/measured_results.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    fasim::fuzz::run_contract([&] {
        const fasim::figures::MeasuredResults m = fasim::figures::parse_measured_results(text, "fuzz.json");
        if (m.results.empty()) fasim::fuzz::violation("accepted a file without a measurement");
        bool small = m.results.size() <= 4;
        for (const auto& r : m.results) {
            fasim::fuzz::check_finite(r.measured_s, "measured_s");
            if (!(r.measured_s > 0)) fasim::fuzz::violation("a measured time is not positive");
            if (r.predicted_s) {  // none: the file recorded null (not predicted)
                fasim::fuzz::check_finite(*r.predicted_s, "predicted_s");
                if (!(*r.predicted_s > 0)) fasim::fuzz::violation("a predicted time is not positive");
            }
            if (r.algo == nullptr) fasim::fuzz::violation("an entry without a simulator algorithm");
            small = small && r.N <= 1024 && r.Nk <= 1024 && r.batch * r.heads <= 8;
        }
        if (!small) return;
        fasim::figures::FigureRequest req;
        const fasim::figures::Figure f = fasim::figures::predicted_vs_measured(req, m);
        for (const auto& s : f.series) {
            for (double x : s.x) fasim::fuzz::check_finite(x, "figure x");
            for (double y : s.y) fasim::fuzz::check_finite(y, "figure y");
        }
    });
    return 0;
}
