#include "common/notebook.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"

namespace fasim::lessons {

namespace {

using nlohmann::json;  // sorted keys: the order Jupyter itself writes

// The setup cell every notebook starts with. @LESSON@ and @REPO_URL@ are filled in.
const char* kSetup = R"PY(# Setup: find fa-sim and this lesson's program (or build them), define helpers.
import json, os, pathlib, shutil, subprocess, sys, textwrap

LESSON = "@LESSON@"
ARGS = []  # flags for every cell below, e.g. ["--gpu", "H100-SXM"] (see --help)
REPO_URL = "@REPO_URL@"  # where to clone fa-sim from when it is not found here


def _sh(cmd):
    subprocess.run([str(c) for c in cmd], check=True)


def _repo_root():
    here = pathlib.Path.cwd().resolve()
    for d in [here, *here.parents]:
        if (d / "sim" / "cli" / "fa_sim_main.cpp").is_file():
            return d
    if REPO_URL:
        d = here / "fa-sim"
        if not d.exists():
            _sh(["git", "clone", "--depth", "1", REPO_URL, d])
        return d
    raise RuntimeError(
        "fa-sim's sources are not in " + str(here) + " or above it: open this "
        "notebook from notebooks_export/ in a clone of the repository, set "
        "FASIM_BIN to a built fa-sim (build/sim/fa-sim), or install fa-sim and "
        "the lessons on the PATH (cmake --install build)")


def _tools():
    if os.environ.get("FASIM_BIN"):
        fasim = pathlib.Path(os.environ["FASIM_BIN"]).resolve()
        lessons = os.environ.get("FASIM_LESSONS_DIR")
        if not lessons:  # installed (cmake --install): beside fa-sim; a build tree: build/lessons
            lessons = fasim.parent if (fasim.parent / LESSON).exists() else fasim.parent.parent / "lessons"
        return fasim, pathlib.Path(lessons).resolve() / LESSON
    try:
        root = _repo_root()
    except RuntimeError:
        installed = shutil.which("fa-sim")  # cmake --install puts the lessons beside it
        if installed and (pathlib.Path(installed).resolve().parent / LESSON).exists():
            fasim = pathlib.Path(installed).resolve()
            return fasim, fasim.parent / LESSON
        raise
    build = root / "build"
    fasim, lesson = build / "sim" / "fa-sim", build / "lessons" / LESSON
    if not (fasim.exists() and lesson.exists()):
        print("building fa-sim and", LESSON, "in", build, "(a few minutes)")
        if shutil.which("cmake") is None and os.geteuid() == 0:
            _sh([root / "scripts" / "install-deps.sh"])
        try:
            _sh(["cmake", "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
        except subprocess.CalledProcessError:
            if os.geteuid() != 0:
                raise
            _sh([root / "scripts" / "install-deps.sh"])  # missing libraries
            _sh(["cmake", "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release"])
        _sh(["cmake", "--build", build, "-j", "2", "--target", "fa-sim", LESSON])
    return fasim, lesson


FASIM, LESSON_BIN = _tools()
for _p in (FASIM, LESSON_BIN):
    if not _p.exists():
        raise RuntimeError(str(_p) + " does not exist: run scripts/build.sh, "
                           "or point FASIM_BIN at a built fa-sim")


def run(cmd, ok=(0,)):
    """Runs a command and returns what it printed; raises on a bad exit code."""
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if r.returncode not in ok:
        raise RuntimeError(" ".join(map(str, cmd)) + " exited with "
                           + str(r.returncode) + ": " + r.stderr.strip())
    return r.stdout


def fasim(*args):
    """Runs fa-sim with --json and returns the parsed report."""
    return json.loads(run([FASIM, *args, "--json"]))


def show(step):
    """Prints one step of the lesson, computed now by the lesson program."""
    print(run([LESSON_BIN, *ARGS, "--only", step, "--no-prose"]), end="")


def check(answers):
    """Grades answers {exercise id: answer} with the lesson program."""
    for ex_id, answer in answers.items():
        if answer is None:
            print(ex_id + ": no answer yet")
        else:
            cmd = [LESSON_BIN, *ARGS, "--check", f"{ex_id}={answer}"]
            print(run(cmd, ok=(0, 1)), end="")


LESSON_JSON = json.loads(run([LESSON_BIN, *ARGS, "--json"]))
RESULTS = LESSON_JSON["results"]
print(LESSON, "-", LESSON_JSON["title"], "- GPU", LESSON_JSON["parameters"]["gpu"]))PY";

// The setup cell of a notebook on the Python module. @NUMBER@, @TITLE@, @GPU@, @PROBLEM@ and @REPO_URL@ are filled in.
const char* kModuleSetup = R"PY(# Setup: this notebook runs on fa-sim's Python module, fasim (python/README.md).
import pathlib, sys

REPO_URL = "@REPO_URL@"  # where fa-sim is published (empty: not said)
try:
    import fasim
except ImportError:
    # In a clone of fa-sim that scripts/build.sh built, use that build's module.
    _clone = next((d for d in [pathlib.Path.cwd().resolve(), *pathlib.Path.cwd().resolve().parents]
                   if (d / "python" / "fasim" / "tile.py").is_file()), None)
    if _clone is not None and (_clone / "build" / "python" / "fasim").is_dir():
        sys.path.insert(0, str(_clone / "build" / "python"))
        import fasim
    else:
        _where = str(_clone) if _clone else ("git+" + REPO_URL if REPO_URL else "/path/to/fa-sim  # your clone of fa-sim")
        raise ImportError("fasim, fa-sim's Python module, is not installed. Install it with this line, "
                          "then restart the kernel:  %pip install " + _where) from None

import numpy as np
from fasim.text import describe, quantity, table

LESSON = @NUMBER@
GPU = "@GPU@"  # a preset (fasim.gpus() lists them) or a fasim.Gpu (fasim.load_gpu_file)
PROBLEM = dict(@PROBLEM@)  # the problem every step simulates: edit, then run the cells again
RESULTS = {}  # each step's key numbers, by step
print("Lesson @NN@ - @TITLE@ - fasim", fasim.__version__, "- GPU", fasim.gpu(GPU)["name"]))PY";

const char* kQuestions = R"PY(for ex in LESSON_JSON["exercises"]:
    print(textwrap.fill("[" + ex["id"] + "] " + ex["question"], 79,
                        subsequent_indent="    "))
    print(textwrap.fill("Answer" + (" (" + ex["unit"] + ")" if ex["unit"] else "")
                        + ": " + ex["tolerance"] + ".", 79,
                        initial_indent="    ", subsequent_indent="    "))
    print())PY";

std::string two_digits(int n) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "%02d", n);
    return buf;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
    for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
    return s;
}

// Jupyter stores a cell's source as a list of lines, each but the last ending in "\n".
json source_lines(const std::string& text) {
    std::string t = text;
    while (!t.empty() && t.back() == '\n') t.pop_back();
    json lines = json::array();
    std::size_t start = 0;
    while (start <= t.size()) {
        const auto nl = t.find('\n', start);
        if (nl == std::string::npos) {
            lines.push_back(t.substr(start));
            break;
        }
        lines.push_back(t.substr(start, nl - start + 1));
        start = nl + 1;
    }
    return lines;
}

json markdown(const std::string& id, const std::string& text) {
    return {{"cell_type", "markdown"}, {"id", id}, {"metadata", json::object()}, {"source", source_lines(text)}};
}

json code(const std::string& id, const std::string& text) {
    return {{"cell_type", "code"}, {"execution_count", nullptr}, {"id", id}, {"metadata", json::object()},
            {"outputs", json::array()}, {"source", source_lines(text)}};
}

}  // namespace

std::string notebook_file_name(int number, const std::string& slug) { return two_digits(number) + "_" + slug + ".ipynb"; }

bool NotebookSpec::module() const {
    if (steps.empty()) return false;
    for (const NotebookStep& s : steps)
        if (s.code.empty()) return false;
    return true;
}

std::string notebook_text(const NotebookSpec& spec) {
    const std::string nn = two_digits(spec.number), prefix = "l" + nn + "-";
    const std::string file = notebook_file_name(spec.number, spec.slug);
    const std::string repo_url = spec.repo.empty() ? "" : "https://github.com/" + spec.repo;
    json cells = json::array();

    std::string top;
    if (spec.repo.empty())
        top += "<!-- notebook-service badge: export with --notebook-repo OWNER/NAME "
               "(FASIM_NOTEBOOK_REPO=OWNER/NAME notebooks_export/regenerate.sh) to put an 'Open in Colab' badge here -->\n\n";
    else
        top += "[![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/" +
               spec.repo + "/blob/main/notebooks_export/" + file + ")\n\n";
    top += "# Lesson " + nn + ": " + spec.title + "\n\n" + spec.summary + "\n\n";
    if (spec.module()) {
        top += "Every number in this notebook is computed when you run it, by fa-sim's Python module: each step's "
               "cell is plain Python on `fasim.simulate`, `fasim.sweep`, `fasim.run` and `fasim.trace` "
               "([python/README.md](../python/README.md)) that you can change and run again. The lesson program `" +
               spec.program + "` prints the same steps in a terminal. The text and the code are generated from the "
               "lesson's source, `lessons/lesson_" + nn + ".cpp`, by `notebooks_export/regenerate.sh`: change the "
               "lesson, not this file.\n\n"
               "Run the setup cell first; it says how to install the module (`pip install .` in a clone of fa-sim) "
               "if it is missing. To try another GPU or size, change `GPU` or `PROBLEM` there and run all cells again.";
    } else {
        top += "Every number in this notebook is computed when you run it, by `" + spec.program +
               "` (the same program a terminal runs: `build/lessons/" + spec.program + " --step`) and by `fa-sim`. "
               "The text is generated from the lesson's source, `lessons/lesson_" + nn +
               ".cpp`, by `notebooks_export/regenerate.sh`: change the lesson, not this file.\n\n"
               "Run the setup cell first. To try another GPU or size, put flags in `ARGS` there "
               "(e.g. `ARGS = [\"--gpu\", \"H100-SXM\"]`) and run all cells again.";
    }
    cells.push_back(markdown(prefix + "top", top));
    if (spec.module()) {
        std::string setup = kModuleSetup;
        for (const auto& [key, value] : {std::pair<std::string, std::string>{"@NUMBER@", std::to_string(spec.number)},
                                         {"@NN@", nn},
                                         {"@TITLE@", spec.title},
                                         {"@GPU@", spec.gpu},
                                         {"@PROBLEM@", spec.problem},
                                         {"@REPO_URL@", repo_url}})
            setup = replace_all(setup, key, value);
        cells.push_back(code(prefix + "setup", setup));
    } else {
        cells.push_back(code(prefix + "setup",
                             replace_all(replace_all(kSetup, "@LESSON@", spec.program), "@REPO_URL@", repo_url)));
    }

    for (std::size_t i = 0; i < spec.steps.size(); ++i) {
        const NotebookStep& s = spec.steps[i];
        cells.push_back(markdown(prefix + "step-" + s.id + "-text",
                                 "## Step " + std::to_string(i + 1) + ": " + s.title + "\n\n" + s.prose));
        std::string c;
        if (spec.module()) {
            c = s.code;
        } else {
            c = "show(\"" + s.id + "\")";
            if (!s.python.empty()) c += "\n\n" + s.python;
        }
        cells.push_back(code(prefix + "step-" + s.id + "-code", c));
    }

    std::string answers = "ANSWERS = {  # replace None by your answers, then run this cell\n";
    for (const std::string& id : spec.exercise_ids) answers += "    \"" + id + "\": None,\n";
    if (spec.module()) {
        cells.push_back(markdown(prefix + "exercises-text",
                                 "## Exercises\n\n"
                                 "`fasim.lessons.check` grades each answer as `" + spec.program + " --check ID=ANSWER` "
                                 "does: it prints `correct` or a hint. It computes the right answer with the simulator "
                                 "when it checks, for the GPU in `GPU`, and never prints it."));
        cells.push_back(code(prefix + "exercises-list", "EXERCISES = fasim.lessons.questions(LESSON, gpu=GPU)"));
        answers += "}\nfasim.lessons.check(LESSON, ANSWERS, gpu=GPU);";
    } else {
        cells.push_back(markdown(prefix + "exercises-text",
                                 "## Exercises\n\n"
                                 "The lesson program grades each answer: `" + spec.program + " --check ID=ANSWER` "
                                 "prints `correct` (exit code 0) or a hint (exit code 1). It computes the right "
                                 "answer with the simulator when it checks, for the GPU in `ARGS`."));
        cells.push_back(code(prefix + "exercises-list", kQuestions));
        answers += "}\ncheck(ANSWERS)";
    }
    cells.push_back(code(prefix + "exercises-check", answers));

    json nb;
    nb["cells"] = cells;
    nb["metadata"] = {{"kernelspec", {{"display_name", "Python 3"}, {"language", "python"}, {"name", "python3"}}},
                      {"language_info", {{"name", "python"}}}};
    nb["nbformat"] = 4;
    nb["nbformat_minor"] = 5;
    return nb.dump(1, ' ', false) + "\n";
}

void write_notebook(const NotebookSpec& spec, const std::string& path) {
    const std::string text = notebook_text(spec);
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp, std::ios::binary);
        if (!f) throw usage_error("--export-notebook " + path + " cannot be written", "the folder must exist and be writable",
                                  "create the folder or pick another path");
        f << text;
        if (!f) throw usage_error("--export-notebook " + path + " could not be written completely", "the disk must have room",
                                  "free some space and try again");
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw usage_error("--export-notebook " + path + ": " + ec.message(), "the path must be a writable file",
                              "pick another path");
}

}  // namespace fasim::lessons
