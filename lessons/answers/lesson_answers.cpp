// lesson-answers: the answer keys of the lessons, for instructors and autograders. The student
// programs (lesson-NN) grade an answer with --check but never print one; this program links
// every lesson and runs it in answer-key mode (lessons/common/lesson.hpp), so a key is computed
// by the same simulator, for the same GPU and sizes, as the grading.
//
//   lesson-answers 05                     bc=163, reads=..., shrink=... (ID=VALUE per line)
//   lesson-answers 05 --gpu H100-SXM --json   the key record: answers, tolerances, parameters,
//                                         tool version and git commit
//   lesson-answers all [--json]           every lesson at its defaults (--gpu/--gpu-file apply to all)
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli/version.hpp"
#include "common/errors.hpp"
#include "common/lesson.hpp"
#include "common/output.hpp"
#include "common/text.hpp"

#define FASIM_LESSON(n) int lesson_##n##_main(int argc, char** argv);
#include "lesson_list.inc"
#undef FASIM_LESSON

namespace {

using fasim::lessons::Json;

struct Entry {
    int number;
    int (*main)(int, char**);
};

const std::vector<Entry>& entries() {
#define FASIM_LESSON(n) Entry{1##n - 100, &lesson_##n##_main},
    static const std::vector<Entry> e{
#include "lesson_list.inc"
    };
#undef FASIM_LESSON
    return e;
}

std::string two_digits(int n) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%02d", n);
    return buf;
}

std::string numbers() {
    std::string s;
    for (const Entry& e : entries()) s += (s.empty() ? "" : ", ") + two_digits(e.number);
    return s;
}

const char* kProgram = "lesson-answers";

void usage(std::ostream& out) {
    out << "lesson-answers - the answer keys of the fa-sim lessons, for instructors and\n"
           "autograders\n\n"
           "Usage:\n"
           "  lesson-answers NN [FLAGS] [--json]  the key of lesson NN, one of\n"
           "    " << numbers() << "\n"
           "  lesson-answers all [--gpu NAME | --gpu-file FILE] [--json]\n"
           "                                      every lesson's key at its default sizes\n"
           "  lesson-answers --list               the lessons\n"
           "  lesson-answers --version\n\n"
           "FLAGS are the lesson's own GPU and size flags (lesson-NN --help lists them:\n"
           "--gpu, --N, --d, ...); the key is computed by the simulator for them, exactly\n"
           "as lesson-NN --check grades. Output: ID=VALUE per line (all: 'lesson-NN\n"
           "ID=VALUE'); with --json a key record with each answer, its tolerance, the\n"
           "parameters, and the tool's version and git commit (docs/lessons.md, \"Answer\n"
           "keys\"). The students' programs (lesson-NN) never print answers.\n";
}

// The answer as the text key writes it: a choice word, or the number with 12 significant digits.
std::string answer_text(const Json& a) {
    if (a.at("answer").is_string()) return a.at("answer").get<std::string>();
    return fasim::lessons::num(a.at("answer").get<double>(), 12);
}

int run_all(const std::vector<std::string>& args) {
    bool json = false;
    std::vector<std::string> gpu;  // --gpu NAME or --gpu-file FILE, passed to every lesson
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--json") {
            json = true;
        } else if ((a == "--gpu" || a == "--gpu-file") && i + 1 < args.size() && gpu.empty()) {
            gpu = {a, args[++i]};
        } else {
            throw fasim::usage_error("lesson-answers all: '" + a + "' is not taken here",
                                     "all takes --json and one --gpu NAME or --gpu-file FILE (the other flags differ "
                                     "between lessons)",
                                     "pass size flags to one lesson: lesson-answers NN --N ...");
        }
    }
    std::vector<Json> keys;
    fasim::lessons::answer_key_mode(&keys);
    for (const Entry& e : entries()) {
        std::vector<std::string> argv_s{"lesson-" + two_digits(e.number)};
        argv_s.insert(argv_s.end(), gpu.begin(), gpu.end());
        std::vector<char*> argv;
        for (std::string& s : argv_s) argv.push_back(s.data());
        argv.push_back(nullptr);
        const int rc = e.main(static_cast<int>(argv_s.size()), argv.data());
        if (rc != 0) return rc;  // the lesson said why on stderr
    }
    if (json) {
        Json doc;
        doc["schema_version"] = 1;
        doc["record"] = "answer_keys";
        doc["tool"] = fasim::lessons::tool_record();
        doc["keys"] = keys;
        std::cout << fasim::json_text(doc, 2) << '\n';
    } else {
        for (const Json& k : keys)
            for (const Json& a : k.at("answers"))
                std::cout << k.at("program").get<std::string>() << ' ' << a.at("id").get<std::string>() << '='
                          << answer_text(a) << '\n';
    }
    return 0;
}

int run(int argc, char** argv) {
    if (argc < 2) {
        usage(std::cerr);
        return 2;
    }
    const std::string first = argv[1];
    if (first == "--help" || first == "-h") {
        usage(std::cout);
        return 0;
    }
    if (first == "--version") {
        std::cout << kProgram << ' ' << fasim::version_text() << '\n';
        return 0;
    }
    if (first == "--list") {
        for (const Entry& e : entries()) std::cout << "lesson-" << two_digits(e.number) << '\n';
        return 0;
    }
    if (first == "all") return run_all(std::vector<std::string>(argv + 2, argv + argc));
    // NN, N or lesson-NN
    std::string n = first.rfind("lesson-", 0) == 0 ? first.substr(7) : first;
    int number = -1;
    if (!n.empty() && n.size() <= 2 && n.find_first_not_of("0123456789") == std::string::npos) number = std::stoi(n);
    for (const Entry& e : entries()) {
        if (e.number != number) continue;
        fasim::lessons::answer_key_mode();
        std::string name = "lesson-" + two_digits(number);
        std::vector<char*> args{name.data()};
        for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
        args.push_back(nullptr);
        return e.main(static_cast<int>(args.size()) - 1, args.data());
    }
    throw fasim::usage_error("'" + first + "' is not a lesson", "pass a lesson number, one of " + numbers() + ", or all",
                             "e.g. lesson-answers 05");
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return fasim::finish_stdout(kProgram, run(argc, argv));
    } catch (const fasim::UsageError& e) {
        std::cerr << kProgram << ": error: " << e.what() << '\n';
        return 2;
    } catch (const std::exception& e) {
        std::cerr << kProgram << ": internal error: " << fasim::escape_control(e.what())
                  << " (please report this with the command line)\n";
        return 1;
    }
}
