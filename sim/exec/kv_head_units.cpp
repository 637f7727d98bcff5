#include "exec/kv_head_units.hpp"

#include <stdexcept>
#include <string>

namespace fasim {

Region KvHeadUnits::folded(const Region& r) {
    const GlobalTensor& t = *r.tensor;
    const std::int64_t per_unit = heads_per_unit(t.heads);
    if (per_unit <= 1) return r;
    if (r.head < 0 || r.head >= per_unit)
        throw std::logic_error("tensor " + t.name + ": head " + std::to_string(r.head) + " is outside the simulated K/V head's " +
                               std::to_string(per_unit) + " heads");
    const auto id = static_cast<std::size_t>(t.id);
    if (id >= stacked_.size()) stacked_.resize(id + 1);
    const std::int64_t padded_rows = (t.rows + t.region_rows - 1) / t.region_rows * t.region_rows;
    if (!stacked_[id]) {
        GlobalTensor s = t;
        s.heads = t.heads / per_unit;
        s.rows = per_unit * padded_rows;
        stacked_[id] = std::make_unique<GlobalTensor>(s);
    }
    Region f = r;
    f.tensor = stacked_[id].get();
    f.head = 0;
    f.row0 = r.head * padded_rows + r.row0;
    return f;
}

}  // namespace fasim
