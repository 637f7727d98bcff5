// Writes a lesson's Jupyter notebook (nbformat 4.5, Python 3 kernel) from the same step
// definitions the executable prints, so prose never drifts between the two.
#pragma once

#include <string>
#include <vector>

namespace fasim::lessons {

struct NotebookStep {
    std::string id, title, prose, python;
    std::string code;  // the step as Python on the module (Step::code); empty: the lesson program's output
};

// Two kinds of notebook. When every step has `code`, the notebook runs on the Python module alone
// (`import fasim`): its setup cell says how to install the module when it is missing, defines GPU and
// PROBLEM from the lesson's defaults, and each step's cell is its code, plain Python on
// fasim.simulate/sweep/run/trace; the exercises are graded by fasim.lessons. Otherwise the cells run
// the lesson program and fa-sim in subprocesses, as before.
struct NotebookSpec {
    int number = 0;
    std::string slug, title, summary, program;
    std::string repo;  // OWNER/NAME for the notebook-service badge; empty: a placeholder comment
    std::vector<NotebookStep> steps;
    std::vector<std::string> exercise_ids;
    std::string gpu;      // module notebooks: the lesson's default GPU
    std::string problem;  // module notebooks: the lesson's default problem as Python keywords, "batch=1, heads=16, ..."
    bool module() const;  // every step has code
};

// "05_flashattention_1.ipynb"
std::string notebook_file_name(int number, const std::string& slug);

// The notebook as text (keys sorted, one-space indent, as Jupyter writes it).
std::string notebook_text(const NotebookSpec& spec);
// Writes it atomically (temporary file + rename). Throws UsageError when it cannot.
void write_notebook(const NotebookSpec& spec, const std::string& path);

}  // namespace fasim::lessons
