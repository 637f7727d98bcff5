// The registry: every algorithm fa-sim knows, in the order reports list them. An algorithm is its
// own file (this folder); to add one, declare its function here and list it
// (docs/adding-an-algorithm.md).
#include <stdexcept>
#include <vector>

#include "algorithms/algorithm.hpp"

namespace fasim {

const Algorithm& standard_attention_algorithm();
const Algorithm& tiled_attention_algorithm();
const Algorithm& flash_attention_1_algorithm();
const Algorithm& flash_attention_2_algorithm();
const Algorithm& flash_decoding_algorithm();
const Algorithm& standard_attention_backward_algorithm();
const Algorithm& flash_attention_1_backward_algorithm();
const Algorithm& flash_attention_2_backward_algorithm();
const Algorithm& torch_math_attention_algorithm();
const Algorithm& torch_math_attention_backward_algorithm();

std::span<const Algorithm* const> algorithms() {
    static const Algorithm* const registry[] = {
        &standard_attention_algorithm(),
        &tiled_attention_algorithm(),
        &flash_attention_1_algorithm(),
        &flash_attention_2_algorithm(),
        &flash_decoding_algorithm(),
        &torch_math_attention_algorithm(),
        &standard_attention_backward_algorithm(),
        &flash_attention_1_backward_algorithm(),
        &flash_attention_2_backward_algorithm(),
        &torch_math_attention_backward_algorithm(),
    };
    return registry;
}

std::vector<const Algorithm*> algorithms(Pass pass) {
    std::vector<const Algorithm*> out;
    for (const Algorithm* a : algorithms())
        if (a->pass == pass) out.push_back(a);
    return out;
}

std::vector<const Algorithm*> compared_algorithms(Pass pass) {
    std::vector<const Algorithm*> out = algorithms(pass);
    std::erase_if(out, [](const Algorithm* a) { return a->library_model; });
    return out;
}

std::vector<const Algorithm*> training_algorithms() {
    std::vector<const Algorithm*> out = compared_algorithms(Pass::forward);
    std::erase_if(out, [](const Algorithm* a) { return a->decoding; });
    return out;
}

const Algorithm* backward_of(const Algorithm& forward) {
    for (const Algorithm* a : algorithms())
        if (a->pass == Pass::backward && a->family == forward.id) return a;
    return nullptr;
}

const Algorithm* find_algorithm(std::string_view id) {
    for (const Algorithm* a : algorithms())
        if (a->id == id) return a;
    return nullptr;
}

const Algorithm& algorithm(std::string_view id) {
    if (const Algorithm* a = find_algorithm(id)) return *a;
    throw std::invalid_argument("no algorithm '" + std::string(id) + "' in the registry (" + algorithm_ids() + ")");
}

std::string algorithm_ids(std::string_view last_separator) {
    std::string s;
    const std::vector<const Algorithm*> all = algorithms(Pass::forward);
    for (std::size_t i = 0; i < all.size(); ++i)
        s += (i == 0 ? "" : i + 1 == all.size() ? std::string(last_separator) : std::string(", ")) + std::string(all[i]->id);
    return s;
}

}  // namespace fasim
