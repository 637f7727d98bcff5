// Prints a tile program's steps as the functional executor runs it: which tile was
// loaded from where, the running m and ℓ of the first rows, the rescale factors
// applied to O, what was written. Deterministic, so lessons and tests can diff it.
#pragma once

#include <ostream>

#include "exec/observer.hpp"

namespace fasim {

class TracePrinter final : public Observer {
public:
    explicit TracePrinter(std::ostream& out, int rows_shown = 4, int cols_shown = 8)
        : out_(out), rows_(rows_shown), cols_(cols_shown) {}
    void on_step(const Step& step) override;

private:
    void values(const reference::MatrixF& m, const char* indent);
    std::ostream& out_;
    int rows_, cols_;
};

}  // namespace fasim
