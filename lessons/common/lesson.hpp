// The framework every lesson executable is built on.
//
// A lesson is a list of steps and a list of exercises. Each step has a title, prose
// (static text in the format of text.hpp) and a body that computes and prints its
// numbers with the simulator or the reference, recording its key results. The same
// definitions give:
//   lesson-NN                    every step, then the exercises (80 columns)
//   lesson-NN --step             the same, waiting for Enter between steps (terminals only)
//   lesson-NN --only K           step K alone (--no-prose: without its prose)
//   lesson-NN --json             the exercises and every step's key results, deterministic
//   lesson-NN --check ID=ANSWER  grades one exercise (repeatable): exit 0 correct, 1 not;
//                                it never prints the right answer
//   lesson-NN --check ... --json the same as a graded record in JSON (tool version and commit)
//   lesson-NN --export-notebook F  the Jupyter notebook of this lesson (prose copied from
//                                the steps, code cells that run this program)
// Bad flags: one line naming the value, the range and a fix, exit code 2.
//
// The answer keys are not in the lesson executables' options: the instructors' program
// lesson-answers (lessons/answers/) links every lesson and runs it in answer-key mode
// (answer_key_mode below), with the same --gpu and size flags.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/exact_json.hpp"  // counts in results (exact past 64 bits); written with json_text()

#include "gpu/gpu_spec.hpp"
#include "problem/attention_problem.hpp"

namespace CLI {
class App;
}

namespace fasim::lessons {

using Json = nlohmann::ordered_json;

// What a step body gets: where to print, and where to record its key results.
struct Ctx {
    std::ostream& out;
    Json& results;
};

struct Step {
    Step(std::string id_, std::string title_, std::string prose_, std::function<void(Ctx&)> body_,
         std::string python_ = "", std::string code_ = "")
        : id(std::move(id_)), title(std::move(title_)), prose(std::move(prose_)), body(std::move(body_)),
          python(std::move(python_)), code(std::move(code_)) {}
    std::string id;      // stable, e.g. "trace"
    std::string title;
    std::string prose;   // static text (text.hpp format); also the notebook's Markdown
    std::function<void(Ctx&)> body;
    std::string python;  // optional notebook code run after the step's output (plots);
                         // it can use RESULTS (this lesson's --json "results") and fasim()
    // The step in Python on the module (notebooks that need no lesson program): plain Python that
    // computes what body computes with fasim.simulate/sweep/run/trace, prints it, and records its key
    // results in RESULTS[id] under body's keys (tests/notebooks compares them with --json's). It may
    // use GPU, PROBLEM and fasim.text (the setup cell). Either every step of a lesson has one or none.
    std::string code;
};

// One exercise; its answer is computed by the simulator when it is checked.
struct Exercise {
    enum class Kind { integer, number, choice };
    std::string id;
    std::string question;
    Kind kind = Kind::integer;
    double rel_tol = 0;                 // number: accepted relative error (e.g. 0.02)
    std::vector<std::string> choices;   // choice: the accepted words
    std::string unit;                   // what the answer counts ("bytes", "blocks", ...)
    std::function<double()> number;     // integer / number answer
    std::function<std::string()> text;  // choice answer (one of choices)
    std::string hint;                   // shown after a wrong answer
    double abs_tol = 0;                 // number: accepted absolute error (when larger)
};

// Each lesson's entry point. lessons/CMakeLists.txt compiles lesson_NN.cpp with
// FASIM_LESSON_ENTRY=lesson_NN_main: lesson-NN's main() calls it (common/lesson_main.cpp), and
// so does lesson-answers.
#ifndef FASIM_LESSON_ENTRY
#define FASIM_LESSON_ENTRY main
#endif

// Answer-key mode, for lesson-answers only: from now on Lesson::run prints the answer key for the
// GPU and sizes its flags give (ID=VALUE lines, or with --json a key record) instead of the lesson.
// With `collect`, it appends the key records there instead of printing them.
void answer_key_mode(std::vector<Json>* collect = nullptr);

// The tool's version and git commit as every JSON record carries them:
// {"name": "fa-sim", "version": "0.1.0", "commit": "b0b597a1c2d3-dirty"} ("unknown" without git).
Json tool_record();

// Which problem-size flags a lesson offers.
enum ProblemFlag : unsigned {
    kN = 1, kD = 2, kHeads = 4, kBatch = 8, kDtype = 16, kCausal = 32,
    kAllProblemFlags = kN | kD | kHeads | kBatch | kDtype | kCausal
};

class Lesson {
public:
    Lesson(int number, std::string slug, std::string title, std::string summary);
    ~Lesson();
    Lesson(const Lesson&) = delete;
    Lesson& operator=(const Lesson&) = delete;

    // ---- options (before run) ----
    // The GPU the lesson runs on without --gpu or --gpu-file (default_gpu_name() unless set here).
    void default_gpu(std::string name);
    // Offers --N, --d, ... with these defaults. --gpu and --gpu-file are always offered.
    void problem_options(const AttentionProblem& defaults, unsigned flags);
    // An extra whole-number option; the returned reference holds its value after parsing.
    std::int64_t& int_option(const std::string& flag, std::int64_t def, std::int64_t lo, std::int64_t hi,
                             const std::string& help);
    // An extra string option with a fixed set of values.
    std::string& choice_option(const std::string& flag, std::string def, std::vector<std::string> choices,
                               const std::string& help);
    // A free-form string option (a path, say).
    std::string& string_option(const std::string& flag, std::string def, const std::string& help);
    bool& flag_option(const std::string& flag, const std::string& help);

    // ---- content (inside the builder passed to run) ----
    void step(Step s);
    void exercise(Exercise e);

    const GpuSpec& gpu() const { return gpu_; }
    const AttentionProblem& problem() const { return problem_; }
    std::string program() const;  // "lesson-05"
    int number() const { return number_; }

    // Parses argv, calls build(*this) to define steps and exercises, then does what
    // the flags ask. Returns the exit code (UsageError -> one line on stderr, 2).
    int run(int argc, char** argv, const std::function<void(Lesson&)>& build);

private:
    struct IntOpt;
    struct ChoiceOpt;
    int dispatch();
    void print_header(std::ostream& out) const;
    void run_step(std::size_t i, std::ostream& out, Json& results, bool prose) const;
    void print_exercises(std::ostream& out) const;
    Json json_document() const;
    int check(const std::vector<std::string>& specs, bool json) const;
    int answer_key() const;
    void export_notebook(const std::string& path) const;
    Json parameters() const;

    int number_;
    std::string slug_, title_, summary_;
    std::unique_ptr<CLI::App> app_;
    std::deque<IntOpt> ints_;
    std::deque<ChoiceOpt> choices_;
    std::deque<bool> flags_;
    unsigned problem_flags_ = 0;
    AttentionProblem problem_;
    GpuSpec gpu_;
    std::string default_gpu_;
    std::string gpu_name_, gpu_file_, n_, d_, heads_, batch_, dtype_, only_, export_path_, notebook_repo_;
    bool step_mode_ = false, no_prose_ = false, json_ = false;
    std::vector<std::string> checks_;
    std::vector<Step> steps_;
    std::vector<Exercise> exercises_;
};

}  // namespace fasim::lessons
