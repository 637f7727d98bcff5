#include "exec/kernel_record.hpp"

#include <numeric>

namespace fasim {

std::int64_t LevelTraffic::read_bytes() const { return std::accumulate(read.begin(), read.end(), std::int64_t{0}); }
std::int64_t LevelTraffic::write_bytes() const { return std::accumulate(write.begin(), write.end(), std::int64_t{0}); }

LevelTraffic& LevelTraffic::operator+=(const LevelTraffic& o) {
    for (std::size_t i = 0; i < read.size(); ++i) {
        read[i] += o.read[i];
        write[i] += o.write[i];
    }
    return *this;
}

LevelTraffic LevelTraffic::scaled(std::int64_t factor) const {
    LevelTraffic t = *this;
    for (std::size_t i = 0; i < read.size(); ++i) {
        t.read[i] *= factor;
        t.write[i] *= factor;
    }
    return t;
}

}  // namespace fasim
