// Writes a lesson's Jupyter notebook (nbformat 4.5, Python 3 kernel) from the same step
// definitions the executable prints, so prose never drifts between the two.
#pragma once

#include <string>
#include <vector>

namespace fasim::lessons {

struct NotebookStep {
    std::string id, title, prose, python;
};

struct NotebookSpec {
    int number = 0;
    std::string slug, title, summary, program;
    std::string repo;  // OWNER/NAME for the notebook-service badge; empty: a placeholder comment
    std::vector<NotebookStep> steps;
    std::vector<std::string> exercise_ids;
};

// "05_flashattention_1.ipynb"
std::string notebook_file_name(int number, const std::string& slug);

// The notebook as text (keys sorted, one-space indent, as Jupyter writes it).
std::string notebook_text(const NotebookSpec& spec);
// Writes it atomically (temporary file + rename). Throws UsageError when it cannot.
void write_notebook(const NotebookSpec& spec, const std::string& path);

}  // namespace fasim::lessons
