// The tile API in Python (fasim.tile): a Python function program(x, p, cfg) written like a C++ tile
// program (course/starter/*.cpp, sim/algorithms/) runs on the same executors. Python objects stand for
// the executor, the block and its tiles only while the C++ ones exist: a tile kept after its block
// ended, or a block or executor kept after its run, raises fasim.tile.TileError when used.
#pragma once

#include <functional>
#include <stdexcept>

#include <pybind11/pybind11.h>

#include "algorithms/algorithm.hpp"

namespace fasim::python {

// A tile, block or executor used outside its lifetime, or a tile or tensor of another block or run.
struct TileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

using PythonProgramFn = std::function<void(Executor&, const AttentionProblem&, const TileConfig&)>;

// Adds the submodule `tile` to the compiled module.
void bind_tile_api(pybind11::module_& m);

// A Python callable program(x, p, cfg) as a C++ tile program. The returned function takes the GIL
// itself; a Python exception comes out as pybind11::error_already_set (a std::exception).
PythonProgramFn python_program(pybind11::object program);

// A registered algorithm with its tile program replaced by a Python one (its tiles, closed form and the
// rest kept), for as long as this object lives on this thread: what fasim.run(..., program=) runs.
class SubstitutedProgram {
public:
    SubstitutedProgram(const Algorithm& reference, pybind11::object program);
    ~SubstitutedProgram();
    SubstitutedProgram(const SubstitutedProgram&) = delete;
    SubstitutedProgram& operator=(const SubstitutedProgram&) = delete;
    const Algorithm& algorithm() const { return algorithm_; }

private:
    PythonProgramFn program_;
    const PythonProgramFn* previous_ = nullptr;
    Algorithm algorithm_;
};

}  // namespace fasim::python
