#include "exec/kernel_record.hpp"

#include <algorithm>
#include <stdexcept>

namespace fasim {

Count LevelTraffic::read_bytes() const {
    Count sum = 0;
    for (const TensorBytes& t : tensors) sum += t.read;
    return sum;
}

Count LevelTraffic::write_bytes() const {
    Count sum = 0;
    for (const TensorBytes& t : tensors) sum += t.write;
    return sum;
}

LevelTraffic& LevelTraffic::operator+=(const LevelTraffic& o) {
    if (tensors.size() < o.tensors.size()) {
        for (std::size_t i = tensors.size(); i < o.tensors.size(); ++i) tensors.push_back({o.tensors[i].name});
    }
    for (std::size_t i = 0; i < o.tensors.size(); ++i) {
        if (tensors[i].name != o.tensors[i].name)
            throw std::logic_error("LevelTraffic: adding counts of tensor " + o.tensors[i].name + " to " + tensors[i].name);
        tensors[i].read += o.tensors[i].read;
        tensors[i].write += o.tensors[i].write;
    }
    return *this;
}

LevelTraffic& LevelTraffic::add_by_name(const LevelTraffic& o) {
    for (const TensorBytes& b : o.tensors) {
        auto it = std::find_if(tensors.begin(), tensors.end(), [&](const TensorBytes& t) { return t.name == b.name; });
        if (it == tensors.end()) it = tensors.insert(tensors.end(), {b.name});
        it->read += b.read;
        it->write += b.write;
    }
    return *this;
}

LevelTraffic LevelTraffic::scaled(Count factor) const {
    LevelTraffic t = *this;
    for (TensorBytes& b : t.tensors) {
        b.read *= factor;
        b.write *= factor;
    }
    return t;
}

const TensorBytes* LevelTraffic::find(std::string_view name) const {
    for (const TensorBytes& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

Count read_of(const LevelTraffic& t, std::string_view name) {
    const TensorBytes* b = t.find(name);
    return b ? b->read : 0;
}

Count write_of(const LevelTraffic& t, std::string_view name) {
    const TensorBytes* b = t.find(name);
    return b ? b->write : 0;
}

}  // namespace fasim
