#include "common/lesson.hpp"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "cli/cli_options.hpp"
#include "cli/version.hpp"
#include "common/errors.hpp"
#include "common/output.hpp"
#include "common/notebook.hpp"
#include "common/text.hpp"
#include "gpu/gpu_catalog.hpp"
#include "plot/atomic_write.hpp"

namespace fasim::lessons {

struct Lesson::IntOpt {
    std::string flag, text, help;
    std::int64_t lo = 0, hi = 0, value = 0;
};

struct Lesson::ChoiceOpt {
    std::string flag, value;
    std::vector<std::string> choices;
};

namespace {

std::string lower_case(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string two_digits(int n) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02d", n);
    return buf;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string trim(const std::string& s) {
    const auto a = s.find_first_not_of(" \t");
    if (a == std::string::npos) return "";
    return s.substr(a, s.find_last_not_of(" \t") - a + 1);
}

// "1,024" and "1_024" are read as 1024; returns false for anything that is not a number.
bool parse_number(std::string s, double& v) {
    s = trim(s);
    s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ',' || c == '_'; }), s.end());
    if (s.empty()) return false;
    char* end = nullptr;
    v = std::strtod(s.c_str(), &end);
    return end == s.c_str() + s.size() && std::isfinite(v);
}

std::string tolerance_text(const Exercise& e) {
    switch (e.kind) {
        case Exercise::Kind::integer: return "exact whole number";
        case Exercise::Kind::number:
            if (e.abs_tol > 0 && e.rel_tol == 0) return "within " + num(e.abs_tol, 3) + " of the computed value";
            return "within " + num(100 * e.rel_tol, 3) + "% of the computed value";
        case Exercise::Kind::choice: {
            std::string s = "one word: ";
            for (std::size_t i = 0; i < e.choices.size(); ++i) s += (i ? " or " : "") + e.choices[i];
            return s;
        }
    }
    return "";
}

const char* kind_name(Exercise::Kind k) {
    switch (k) {
        case Exercise::Kind::integer: return "integer";
        case Exercise::Kind::number: return "number";
        case Exercise::Kind::choice: return "choice";
    }
    return "?";
}

// lesson-answers: answer-key mode (answer_key_mode()).
struct KeyMode {
    bool on = false;
    std::vector<Json>* collect = nullptr;
};
KeyMode& key_mode() {
    static KeyMode m;
    return m;
}

}  // namespace

Lesson::Lesson(int number, std::string slug, std::string title, std::string summary)
    : number_(number), slug_(std::move(slug)), title_(std::move(title)), summary_(std::move(summary)),
      app_(std::make_unique<CLI::App>("Lesson " + two_digits(number) + ": " + title_, "lesson-" + two_digits(number))) {
    CLI::App& app = *app_;
    app.add_option("--gpu", gpu_name_, "GPU preset (default " + default_gpu_name() + "; fa-sim --list-gpus)")->type_name("NAME");
    app.add_option("--gpu-file", gpu_file_, "describe another GPU in a JSON file (docs/gpu-file.md)")->type_name("FILE");
    app.add_flag("--step", step_mode_, "wait for Enter between steps (only when input is a terminal)");
    app.add_option("--only", only_, "show one step only: its number or id")->type_name("STEP");
    app.add_flag("--no-prose", no_prose_, "with --only: the step's computed output without its prose");
    app.add_flag("--json", json_,
                 "print the exercises and the key results as JSON (deterministic); with --check, the graded record");
    app.add_option("--check", checks_,
                   "grade an exercise: --check ID=ANSWER (repeatable); exit 0 if correct, 1 if not; with --json a graded "
                   "record")
        ->type_name("ID=ANSWER");
    app.add_option("--export-notebook", export_path_,
                   "write this lesson's Jupyter notebook to FILE (or into a directory, as NN_slug.ipynb)")
        ->type_name("FILE");
    app.add_option("--notebook-repo", notebook_repo_,
                   "with --export-notebook: OWNER/NAME of the published repository, for the notebook-service badge")
        ->type_name("OWNER/NAME");
    app.set_version_flag("--version", program() + " " + version_text(),
                         "print the version of fa-sim this lesson belongs to (and its git commit) and exit");
}

Lesson::~Lesson() = default;

void Lesson::default_gpu(std::string name) {
    default_gpu_ = std::move(name);
    app_->get_option("--gpu")->description("GPU preset (default " + default_gpu_ + " in this lesson; fa-sim --list-gpus)");
}

std::string Lesson::program() const { return "lesson-" + two_digits(number_); }

void Lesson::problem_options(const AttentionProblem& defaults, unsigned flags) {
    problem_ = defaults;
    problem_flags_ = flags;
    CLI::App& app = *app_;
    n_ = std::to_string(defaults.N);
    d_ = std::to_string(defaults.d);
    heads_ = std::to_string(defaults.heads);
    batch_ = std::to_string(defaults.batch);
    dtype_ = dtype_name(defaults.dtype);
    if (flags & kN) app.add_option("--N", n_, "sequence length, 1..16777216 (default " + n_ + ")")->type_name("INT");
    if (flags & kD)
        app.add_option("--d", d_, "head dimension: " + supported_head_dims_text() + " (default " + d_ + ")")->type_name("INT");
    if (flags & kHeads)
        app.add_option("--heads", heads_, "attention heads, 1.." + limit_text(ProblemLimits::max_heads) + " (default " + heads_ + ")")
            ->type_name("INT");
    if (flags & kBatch)
        app.add_option("--batch", batch_, "batch size, 1.." + limit_text(ProblemLimits::max_batch) + "; batch*heads <= " +
                                              limit_text(ProblemLimits::max_batch_heads) + " (default " + batch_ + ")")
            ->type_name("INT");
    if (flags & kDtype)
        app.add_option("--dtype", dtype_, "storage precision: fp32, fp16 or bf16, any case (default " + dtype_ + ")")
            ->type_name("DTYPE");
    if (flags & kCausal) app.add_flag("--causal", problem_.causal, "causal mask (bottom-right aligned)");
}

std::int64_t& Lesson::int_option(const std::string& flag, std::int64_t def, std::int64_t lo, std::int64_t hi,
                                 const std::string& help) {
    ints_.push_back(IntOpt{flag, std::to_string(def), help, lo, hi, def});
    IntOpt& o = ints_.back();
    app_->add_option(flag, o.text, help + ", " + std::to_string(lo) + ".." + std::to_string(hi) + " (default " + o.text + ")")
        ->type_name("INT");
    return o.value;
}

std::string& Lesson::choice_option(const std::string& flag, std::string def, std::vector<std::string> choices,
                                   const std::string& help) {
    ChoiceOpt o{flag, def, std::move(choices)};
    std::string list;
    for (std::size_t i = 0; i < o.choices.size(); ++i) list += (i ? ", " : "") + o.choices[i];
    choices_.push_back(std::move(o));
    app_->add_option(flag, choices_.back().value, help + ": " + list + " (default " + def + ")")->type_name("CHOICE");
    return choices_.back().value;
}

std::string& Lesson::string_option(const std::string& flag, std::string def, const std::string& help) {
    choices_.push_back(ChoiceOpt{flag, def, {}});
    app_->add_option(flag, choices_.back().value, help + " (default " + def + ")")->type_name("PATH");
    return choices_.back().value;
}

bool& Lesson::flag_option(const std::string& flag, const std::string& help) {
    flags_.push_back(false);
    app_->add_flag(flag, flags_.back(), help);
    return flags_.back();
}

void Lesson::step(Step s) { steps_.push_back(std::move(s)); }
void Lesson::exercise(Exercise e) { exercises_.push_back(std::move(e)); }

int Lesson::run(int argc, char** argv, const std::function<void(Lesson&)>& build) {
    const std::string prog = program();
    try {
        try {
            app_->parse(argc, argv);
        } catch (const CLI::CallForHelp&) {
            std::cout << app_->help();
            return finish_stdout(prog, 0);
        } catch (const CLI::CallForVersion& e) {
            std::cout << e.what() << '\n';
            return finish_stdout(prog, 0);
        } catch (const CLI::ParseError& e) {
            throw usage_error(std::string(e.what()), "see the options in " + prog + " --help", "correct the command line");
        }
        // Problem sizes, with fa-sim's messages.
        AttentionProblem& p = problem_;
        if (problem_flags_ & kN) {
            p.N = parse_integer("--N", n_, 1, ProblemLimits::max_seq, "pass a sequence length between 1 and 16777216 (2^24)");
            p.Nk = p.N;
        }
        if (problem_flags_ & kD) p.d = parse_integer("--d", d_, 1, 1024, "pick one of " + supported_head_dims_text());
        if (problem_flags_ & kHeads)
            p.heads = parse_integer("--heads", heads_, 1, ProblemLimits::max_heads,
                                    "pass 1.." + limit_text(ProblemLimits::max_heads) + " heads");
        if (problem_flags_ & kBatch)
            p.batch = parse_integer("--batch", batch_, 1, ProblemLimits::max_batch,
                                    "pass a batch size of 1.." + limit_text(ProblemLimits::max_batch) + " (batch*heads at most " +
                                        limit_text(ProblemLimits::max_batch_heads) + ")");
        if (problem_flags_ & kDtype) {
            if (auto t = parse_dtype(lower_case(dtype_))) p.dtype = *t;  // any case, as fa-sim takes it
            else throw usage_error("--dtype '" + dtype_ + "' is not supported", "dtype must be fp32, fp16 or bf16", "e.g. --dtype fp16");
        }
        validate(p);
        for (IntOpt& o : ints_)
            o.value = parse_integer(o.flag, o.text, o.lo, o.hi,
                                    "pass a whole number from " + std::to_string(o.lo) + " to " + std::to_string(o.hi));
        for (ChoiceOpt& o : choices_) {
            if (o.choices.empty()) continue;
            for (const std::string& choice : o.choices)  // any case, as fa-sim's choices
                if (lower_case(choice) == lower_case(o.value)) o.value = choice;
            if (std::find(o.choices.begin(), o.choices.end(), o.value) == o.choices.end()) {
                std::string list;
                for (std::size_t i = 0; i < o.choices.size(); ++i) list += (i ? ", " : "") + o.choices[i];
                throw usage_error(o.flag + " '" + o.value + "' is not one of the choices", o.flag.substr(2) + " must be " + list,
                                  "e.g. " + o.flag + " " + o.choices.front());
            }
        }
        if (!gpu_name_.empty() && !gpu_file_.empty())
            throw usage_error("--gpu " + gpu_name_ + " and --gpu-file " + gpu_file_ + " were both given", "one GPU per run",
                              "pass only one of them");
        const std::string preset = !gpu_name_.empty() ? gpu_name_ : !default_gpu_.empty() ? default_gpu_ : default_gpu_name();
        gpu_ = !gpu_file_.empty() ? load_gpu_file(gpu_file_) : find_gpu_preset(preset);

        // --json goes with --check (a graded record) or alone; in answer-key mode with nothing else.
        const int modes = (json_ && checks_.empty() ? 1 : 0) + (!checks_.empty() ? 1 : 0) + (!export_path_.empty() ? 1 : 0) +
                          (!only_.empty() ? 1 : 0);
        if (modes > 1)
            throw usage_error("--json, --check, --only and --export-notebook were combined",
                              "one of them per run (--check may take --json)", "run " + prog + " once for each");
        if (key_mode().on && (!checks_.empty() || !only_.empty() || !export_path_.empty() || step_mode_ || no_prose_))
            throw usage_error("lesson-answers " + two_digits(number_) + " was given a lesson option (--check, --only, --step, "
                              "--no-prose or --export-notebook)",
                              "lesson-answers prints the answer key; it takes the GPU and size flags and --json",
                              "run " + prog + " for the lesson itself");
        if (no_prose_ && only_.empty())
            throw usage_error("--no-prose was given without --only", "--no-prose applies to one step", "e.g. --only 2 --no-prose");
        if (!notebook_repo_.empty() && export_path_.empty())
            throw usage_error("--notebook-repo was given without --export-notebook", "it names the repository in a notebook",
                              "add --export-notebook FILE");
        if (!notebook_repo_.empty() && (notebook_repo_.find('/') == std::string::npos ||
                                        notebook_repo_.find_first_of(" \"'<>()") != std::string::npos))
            throw usage_error("--notebook-repo '" + notebook_repo_ + "' is not OWNER/NAME", "a GitHub repository such as owner/fa-sim",
                              "e.g. --notebook-repo owner/fa-sim");

        build(*this);
        return finish_stdout(prog, dispatch());  // a write that failed (> /dev/full) is an error
    } catch (const UsageError& e) {
        std::cerr << prog << ": error: " << e.what() << '\n';
        return finish_stdout(prog, 2);
    } catch (const std::exception& e) {
        std::cerr << prog << ": internal error: " << escape_control(e.what()) << " (please report this with the command line)\n";
        return finish_stdout(prog, 1);
    }
}

Json Lesson::parameters() const {
    Json j;
    j["gpu"] = gpu_.name;
    const AttentionProblem& p = problem_;
    if (problem_flags_ & kN) j["N"] = p.N;
    if (problem_flags_ & kD) j["d"] = p.d;
    if (problem_flags_ & kHeads) j["heads"] = p.heads;
    if (problem_flags_ & kBatch) j["batch"] = p.batch;
    if (problem_flags_ & kDtype) j["dtype"] = dtype_name(p.dtype);
    if (problem_flags_ & kCausal) j["causal"] = p.causal;
    for (const IntOpt& o : ints_) j[o.flag.substr(2)] = o.value;
    for (const ChoiceOpt& o : choices_) j[o.flag.substr(2)] = o.value;
    return j;
}

void Lesson::print_header(std::ostream& out) const {
    const std::string head = "Lesson " + two_digits(number_) + " - " + title_;
    out << head << '\n' << std::string(static_cast<std::size_t>(display_width(head)), '=') << "\n\n";
    print_prose(out, summary_);
    std::string params = "GPU " + gpu_.name;
    const AttentionProblem& p = problem_;
    if (problem_flags_ & (kN | kD | kHeads | kBatch)) {
        params += "; problem";
        if (problem_flags_ & kBatch) params += " B=" + std::to_string(p.batch);
        if (problem_flags_ & kHeads) params += " H=" + std::to_string(p.heads);
        if (problem_flags_ & kN) params += " N=" + std::to_string(p.N);
        if (problem_flags_ & kD) params += " d=" + std::to_string(p.d);
        if (problem_flags_ & kDtype) params += std::string(" ") + dtype_name(p.dtype);
        if (problem_flags_ & kCausal) params += p.causal ? " causal" : " non-causal";
    }
    out << '\n';
    print_para(out, params + " (change with --gpu, " + (problem_flags_ ? "the size flags, " : "") + "see --help).");
}

void Lesson::run_step(std::size_t i, std::ostream& out, Json& results, bool prose) const {
    const Step& s = steps_[i];
    Json& mine = results[s.id];
    mine = Json::object();
    Ctx ctx{out, mine};
    if (prose) {
        const std::string head = "Step " + std::to_string(i + 1) + " of " + std::to_string(steps_.size()) + ": " + s.title;
        for (const auto& l : wrap(head, kWidth)) out << l << '\n';
        out << std::string(static_cast<std::size_t>(std::min(kWidth, display_width(head))), '-') << "\n\n";
        print_prose(out, s.prose);
        out << '\n';
    }
    s.body(ctx);
}

void Lesson::print_exercises(std::ostream& out) const {
    const std::string head = "Exercises";
    out << head << '\n' << std::string(head.size(), '-') << "\n\n";
    print_para(out, "Answer with " + program() + " --check ID=ANSWER. The program computes the right answer with the "
                    "simulator when it checks, so the answers follow --gpu (and any change to the model).");
    for (const Exercise& e : exercises_) {
        out << '\n';
        print_para(out, e.question, "[" + e.id + "] ", "    ");
        print_para(out, "Answer" + (e.unit.empty() ? "" : " (" + e.unit + ")") + ": " + tolerance_text(e) + ".", "    ", "    ");
    }
}

Json Lesson::json_document() const {
    Json doc;
    doc["schema_version"] = 1;
    doc["lesson"] = number_;
    doc["slug"] = slug_;
    doc["title"] = title_;
    doc["program"] = program();
    doc["tool"] = tool_record();
    doc["parameters"] = parameters();
    Json steps = Json::array();
    for (std::size_t i = 0; i < steps_.size(); ++i)
        steps.push_back({{"n", i + 1}, {"id", steps_[i].id}, {"title", steps_[i].title}});
    doc["steps"] = steps;
    Json ex = Json::array();
    for (const Exercise& e : exercises_) {
        Json j{{"id", e.id}, {"question", e.question}, {"answer_type", kind_name(e.kind)}, {"tolerance", tolerance_text(e)}};
        if (e.kind == Exercise::Kind::number) j["relative_tolerance"] = e.rel_tol;
        if (e.kind == Exercise::Kind::choice) j["choices"] = e.choices;
        j["unit"] = e.unit;
        j["check"] = program() + " --check " + e.id + "=ANSWER";
        ex.push_back(j);
    }
    doc["exercises"] = ex;
    Json results = Json::object();
    std::ostringstream discard;
    for (std::size_t i = 0; i < steps_.size(); ++i) run_step(i, discard, results, false);
    doc["results"] = results;
    return doc;
}

void answer_key_mode(std::vector<Json>* collect) {
    key_mode().on = true;
    key_mode().collect = collect;
}

Json tool_record() {
    // version_text() (cli/version.hpp): "0.1.0 (git b0b597a1c2d3-dirty)", or "0.1.0" without git.
    const std::string text = version_text();
    const auto open = text.find(" (git ");
    const std::string version = text.substr(0, open);
    std::string commit = "unknown";
    if (open != std::string::npos) {
        commit = text.substr(open + 6);
        if (!commit.empty() && commit.back() == ')') commit.pop_back();
    }
    return Json{{"name", "fa-sim"}, {"version", version}, {"commit", commit}};
}

int Lesson::check(const std::vector<std::string>& specs, bool json) const {
    auto ids = [&] {
        std::string s;
        for (std::size_t i = 0; i < exercises_.size(); ++i) s += (i ? ", " : "") + exercises_[i].id;
        return s;
    };
    // Validate every spec first, so a typo in the second does not half-grade the first.
    std::vector<std::pair<const Exercise*, std::string>> todo;
    for (const std::string& spec : specs) {
        const auto eq = spec.find('=');
        if (eq == std::string::npos)
            throw usage_error("--check '" + spec + "' names no exercise", "write --check ID=ANSWER with ID one of " + ids(),
                              "e.g. --check " + exercises_.front().id + "=42");
        const std::string id = trim(spec.substr(0, eq));
        const auto it = std::find_if(exercises_.begin(), exercises_.end(), [&](const Exercise& e) { return e.id == id; });
        if (it == exercises_.end())
            throw usage_error("--check '" + spec + "': there is no exercise '" + id + "'", "ID must be one of " + ids(),
                              "see the exercises at the end of " + program() + " or in its --json");
        todo.emplace_back(&*it, trim(spec.substr(eq + 1)));
    }
    // Grade. Neither the text nor the record contains the right answer.
    bool all = true;
    std::int64_t correct = 0;
    Json graded = Json::array();
    for (const auto& [e, given] : todo) {
        bool ok = false;
        std::string why;
        if (e->kind == Exercise::Kind::choice) {
            const std::string want = lower(e->text());
            const std::string got = lower(given);
            if (std::find(e->choices.begin(), e->choices.end(), got) == e->choices.end()) why = tolerance_text(*e) + ". ";
            ok = got == want;
        } else {
            double v = 0;
            if (!parse_number(given, v)) {
                why = "'" + given + "' is not a number" + (e->unit.empty() ? "" : " (answer in " + e->unit + ")") + ". ";
            } else {
                const double want = e->number();
                ok = e->kind == Exercise::Kind::integer ? std::fabs(v - want) < 0.5 && std::fabs(v - std::round(v)) < 1e-9
                                                        : std::fabs(v - want) <= std::max(e->rel_tol * std::fabs(want), e->abs_tol);
            }
        }
        all &= ok;
        correct += ok ? 1 : 0;
        if (json) {
            Json g{{"id", e->id}, {"answer", given}, {"correct", ok}, {"answer_type", kind_name(e->kind)},
                   {"tolerance", tolerance_text(*e)}, {"unit", e->unit}};
            g["feedback"] = ok ? "correct" : "not correct. " + why + "Hint: " + e->hint;
            graded.push_back(g);
        } else if (ok) {
            std::cout << e->id << ": correct\n";
        } else {
            print_para(std::cout, e->id + ": not correct. " + why + "Hint: " + e->hint, "", "    ");
        }
    }
    if (json) {
        Json doc;
        doc["schema_version"] = 1;
        doc["record"] = "graded";
        doc["tool"] = tool_record();
        doc["lesson"] = number_;
        doc["slug"] = slug_;
        doc["program"] = program();
        doc["parameters"] = parameters();
        doc["results"] = graded;
        doc["correct"] = correct;
        doc["total"] = static_cast<std::int64_t>(todo.size());
        doc["all_correct"] = all;
        std::cout << json_text(doc, 2) << '\n';
    }
    return all ? 0 : 1;
}

// lesson-answers NN: the computed answers for this run's GPU and sizes.
int Lesson::answer_key() const {
    Json answers = Json::array();
    for (const Exercise& e : exercises_) {
        Json a{{"id", e.id}, {"answer_type", kind_name(e.kind)}};
        if (e.kind == Exercise::Kind::choice) a["answer"] = e.text();
        else if (e.kind == Exercise::Kind::integer) a["answer"] = static_cast<std::int64_t>(std::llround(e.number()));
        else a["answer"] = e.number();
        a["tolerance"] = tolerance_text(e);
        if (e.kind == Exercise::Kind::number) {
            a["relative_tolerance"] = e.rel_tol;
            a["absolute_tolerance"] = e.abs_tol;
        }
        a["unit"] = e.unit;
        a["question"] = e.question;
        answers.push_back(a);
    }
    Json doc;
    doc["schema_version"] = 1;
    doc["record"] = "answer_key";
    doc["tool"] = tool_record();
    doc["lesson"] = number_;
    doc["slug"] = slug_;
    doc["program"] = program();
    doc["parameters"] = parameters();
    doc["answers"] = answers;
    if (key_mode().collect) {
        key_mode().collect->push_back(doc);
    } else if (json_) {
        std::cout << json_text(doc, 2) << '\n';
    } else {
        for (const Exercise& e : exercises_)
            std::cout << e.id << '=' << (e.kind == Exercise::Kind::choice ? e.text() : num(e.number(), 12)) << '\n';
    }
    return 0;
}

int Lesson::dispatch() {
    if (!export_path_.empty()) {
        NotebookSpec nb;
        nb.number = number_;
        nb.slug = slug_;
        nb.title = title_;
        nb.summary = summary_;
        nb.program = program();
        nb.repo = notebook_repo_;
        for (const Step& s : steps_) nb.steps.push_back({s.id, s.title, s.prose, s.python, s.code});
        // The GPU and problem the lesson runs with (its defaults, unless flags changed them).
        nb.gpu = gpu_file_.empty() ? gpu_.name : !default_gpu_.empty() ? default_gpu_ : default_gpu_name();
        const AttentionProblem& p = problem_;
        std::string kw;
        auto add = [&](const std::string& k, const std::string& v) { kw += (kw.empty() ? "" : ", ") + k + "=" + v; };
        if (problem_flags_ & kBatch) add("batch", std::to_string(p.batch));
        if (problem_flags_ & kHeads) add("heads", std::to_string(p.heads));
        if (problem_flags_ & kN) add("N", std::to_string(p.N));
        if (problem_flags_ & kD) add("d", std::to_string(p.d));
        if (problem_flags_ & kDtype) add("dtype", std::string("\"") + dtype_name(p.dtype) + "\"");
        if (problem_flags_ & kCausal) add("causal", p.causal ? "True" : "False");
        nb.problem = kw;
        std::size_t with_code = 0;
        for (const Step& s : steps_) with_code += s.code.empty() ? 0 : 1;
        if (with_code != 0 && with_code != steps_.size())
            throw std::logic_error(program() + ": " + std::to_string(with_code) + " of " + std::to_string(steps_.size()) +
                                   " steps have notebook code; a module notebook needs it for every step");
        for (const Exercise& e : exercises_) nb.exercise_ids.push_back(e.id);
        std::filesystem::path path = export_path_;
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) path /= notebook_file_name(number_, slug_);
        // Atomically, through a uniquely named temporary file that is removed on any failure.
        plot::atomic_write_file(path, notebook_text(nb));
        return 0;
    }
    if (key_mode().on) return answer_key();
    if (!checks_.empty()) return check(checks_, json_);
    if (json_) {
        std::cout << json_text(json_document(), 2) << '\n';
        return 0;
    }

    Json results = Json::object();
    if (!only_.empty()) {
        std::size_t idx = steps_.size();
        for (std::size_t i = 0; i < steps_.size(); ++i)
            if (steps_[i].id == only_ || std::to_string(i + 1) == trim(only_)) idx = i;
        if (idx == steps_.size()) {
            std::string list;
            for (std::size_t i = 0; i < steps_.size(); ++i) list += (i ? ", " : "") + steps_[i].id;
            throw usage_error("--only '" + only_ + "' is not a step of " + program(),
                              "pass 1.." + std::to_string(steps_.size()) + " or an id: " + list, "e.g. --only 1");
        }
        run_step(idx, std::cout, results, !no_prose_);
        return 0;
    }

    const bool pause = step_mode_ && isatty(fileno(stdin)) != 0;
    print_header(std::cout);
    for (std::size_t i = 0; i < steps_.size(); ++i) {
        std::cout << '\n';
        run_step(i, std::cout, results, true);
        if (pause) {
            const std::string next = i + 1 < steps_.size() ? "step " + std::to_string(i + 2) + ": " + steps_[i + 1].title
                                                           : "the exercises";
            std::string prompt = "[Enter: " + next + "]";
            if (display_width(prompt) > kWidth) prompt = "[Enter: " + (i + 1 < steps_.size() ? "step " + std::to_string(i + 2) : next) + "]";
            std::cout << '\n' << prompt << std::flush;
            std::string line;
            if (!std::getline(std::cin, line)) break;
        }
    }
    std::cout << '\n';
    print_exercises(std::cout);
    return 0;
}

}  // namespace fasim::lessons
