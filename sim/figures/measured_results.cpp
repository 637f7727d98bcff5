#include "figures/measured_results.hpp"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "common/input_file.hpp"
#include "problem/attention_problem.hpp"

namespace fasim::figures {

namespace {

using nlohmann::json;

// JSON nested deeper than this is refused while it is parsed, before anything recurses over it (printing a
// value in a message does: 100,000 nested '[' overflowed the stack). fa-validate's files nest 5 levels.
constexpr int kMaxJsonDepth = 64;

// Files larger than this are refused before they are read (fa-validate's largest is a few MB).
constexpr std::uintmax_t kMaxBytes = std::uintmax_t{256} << 20;

std::string shown(const json& v) {
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
}

class Reader {
public:
    explicit Reader(std::string origin) : origin_(std::move(origin)) {}

    [[noreturn]] void fail(const std::string& field, const std::string& problem, const std::string& allowed,
                           const std::string& fix) const {
        throw usage_error("measured results " + origin_ + ": " + field + " " + problem, allowed, fix);
    }

    const json& member(const json& obj, const std::string& path, const char* key) const {
        auto it = obj.find(key);
        if (it == obj.end())
            fail(path + key, "is missing", std::string("every entry needs \"") + key + "\"",
                 std::string("add \"") + key + "\" (see docs/figures.md for the format), or regenerate the file with fa-validate");
        return *it;
    }

    std::string string_field(const json& obj, const std::string& path, const char* key) const {
        const json& v = member(obj, path, key);
        if (!v.is_string())
            fail(path + key, "= " + shown(v) + " is not a string", std::string("\"") + key + "\" must be a JSON string",
                 "quote the value");
        return v.get<std::string>();
    }

    std::string optional_string(const json& obj, const char* key) const {
        auto it = obj.find(key);
        if (it == obj.end()) return {};
        if (!it->is_string())
            fail(key, "= " + shown(*it) + " is not a string", std::string("\"") + key + "\" must be a JSON string",
                 "quote the value or leave the key out");
        return it->get<std::string>();
    }

    std::int64_t int_field(const json& v, const std::string& field, std::int64_t lo, std::int64_t hi) const {
        const std::string range = std::to_string(lo) + ".." + std::to_string(hi);
        if (!v.is_number_integer())
            fail(field, "= " + shown(v) + " is not an integer", field + " must be an integer in " + range,
                 "write a whole number without quotes");
        // Unsigned values above INT64_MAX would wrap; compare as unsigned first.
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
            fail(field, "= " + shown(v) + " is out of range", field + " must be in " + range, "use a value in range");
        const std::int64_t x = v.get<std::int64_t>();
        if (x < lo || x > hi)
            fail(field, "= " + shown(v) + " is out of range", field + " must be in " + range, "use a value in range");
        return x;
    }

    double seconds_field(const json& obj, const std::string& path, const char* key) const {
        const json& v = member(obj, path, key);
        const std::string field = path + key;
        if (!v.is_number())
            fail(field, "= " + shown(v) + " is not a number", field + " must be a positive number of seconds",
                 "write the time in seconds as a number, e.g. 1.25e-4");
        const double x = v.get<double>();
        if (!std::isfinite(x) || !(x > 0))
            fail(field, "= " + shown(v) + " is out of range", field + " must be a positive, finite number of seconds",
                 "drop the entry or re-measure it");
        return x;
    }

    MeasuredResults parse(const std::string& text) const {
        json doc;
        const json::parser_callback_t limit_depth = [&](int depth, json::parse_event_t event, json&) -> bool {
            if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
                depth >= kMaxJsonDepth)
                fail("(whole file)", "nests objects and arrays more than " + std::to_string(kMaxJsonDepth) + " deep",
                     "a JSON object as fa-validate writes it (5 levels)", "check that this is an fa-validate results file");
            return true;
        };
        try {
            doc = json::parse(text, limit_depth);
        } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1e999
            fail("(whole file)", std::string("is not valid JSON (") + e.what() + ")", "a JSON object",
                 "fix the syntax or regenerate the file with fa-validate");
        }
        if (!doc.is_object())
            fail("(top level)", "is " + std::string(doc.type_name()) + ", not an object",
                 "an object with \"schema_version\", \"gpu\" and \"results\"", "regenerate the file with fa-validate");
        const json& ver = member(doc, "", "schema_version");
        if (!ver.is_number_integer() || ver.get<std::int64_t>() != kMeasuredSchemaVersion)
            fail("schema_version", "= " + shown(ver) + " is not supported",
                 "this fa-sim reads schema_version " + std::to_string(kMeasuredSchemaVersion),
                 "regenerate the file with this version's fa-validate");

        MeasuredResults m;
        m.origin = origin_;
        m.gpu = string_field(doc, "", "gpu");
        if (m.gpu.empty()) fail("gpu", "is empty", "the GPU's name, e.g. \"H200\"", "write the GPU that was measured");
        m.gpu_preset = optional_string(doc, "gpu_preset");
        m.command = optional_string(doc, "command");
        m.driver = optional_string(doc, "driver");
        m.date = optional_string(doc, "date");

        const json& results = member(doc, "", "results");
        if (!results.is_array())
            fail("results", "= " + shown(results) + " is not an array", "\"results\" must be a list of entries",
                 "write \"results\": [ {...}, ... ]");
        if (results.empty())
            fail("results", "is empty", "at least one measured entry", "add entries or do not pass the file");
        for (std::size_t i = 0; i < results.size(); ++i) {
            // Not run (e.g. too large for the card): left out, and said so; fa-validate records no sim_algo then.
            if (results[i].is_object())
                if (auto skip = results[i].find("skipped"); skip != results[i].end()) {
                    m.skipped.push_back(shown(results[i].value("algo", json("?"))) + ": " +
                                        (skip->is_string() ? skip->get<std::string>() : shown(*skip)));
                    continue;
                }
            MeasuredRecord r = record(results[i], i);
            if (auto err = results[i].find("error"); err != results[i].end()) {
                m.failed.push_back(r.kernel + " N=" + std::to_string(r.N) + " d=" + std::to_string(r.d) + " " +
                                   dtype_name(r.dtype) + (r.causal ? " causal" : "") + ": " +
                                   (err->is_string() ? err->get<std::string>() : shown(*err)));
                continue;
            }
            r.measured_s = seconds_field(results[i], "results[" + std::to_string(i) + "].", "measured_s");
            if (const auto pred = results[i].find("predicted_s"); pred == results[i].end() || !pred->is_null())
                r.predicted_s = seconds_field(results[i], "results[" + std::to_string(i) + "].", "predicted_s");
            m.results.push_back(std::move(r));
        }
        if (m.results.empty())
            fail("results", "has no entry with a measurement (" + std::to_string(m.failed.size()) + " failed runs)",
                 "at least one entry with measured_s and predicted_s", "re-run fa-validate on a GPU");
        return m;
    }

private:
    MeasuredRecord record(const json& e, std::size_t i) const {
        const std::string path = "results[" + std::to_string(i) + "].";
        if (!e.is_object())
            fail("results[" + std::to_string(i) + "]", "= " + shown(e) + " is not an object",
                 "every entry is an object with algo, N, d, dtype, causal, batch, heads, measured_s, predicted_s",
                 "write each entry as {\"algo\": ..., ...}");
        MeasuredRecord r;
        r.kernel = string_field(e, path, "algo");
        if (r.kernel.empty()) fail(path + "algo", "is empty", "the measured kernel's name", "write e.g. \"fa2\"");
        if (e.contains("sim_algo")) {
            const std::string sim = string_field(e, path, "sim_algo");
            r.algo = find_algorithm(sim);
            if (!r.algo) fail(path + "sim_algo", "= \"" + sim + "\" is not a simulator algorithm", "one of " + algorithm_ids(", "),
                              "use fa-sim's algorithm names (fa-sim --list-algos)");
        } else {
            r.algo = find_algorithm(r.kernel);
            if (!r.algo)
                fail(path + "algo", "= \"" + r.kernel + "\" is not a simulator algorithm and there is no sim_algo",
                     "algo one of " + algorithm_ids(", ") + ", or a \"sim_algo\" that is",
                     "add \"sim_algo\" naming the algorithm the kernel implements");
        }
        r.N = int_field(member(e, path, "N"), path + "N", 1, ProblemLimits::max_seq);
        r.Nk = r.N;
        if (auto it = e.find("Nk"); it != e.end()) r.Nk = int_field(*it, path + "Nk", 1, ProblemLimits::max_seq);
        r.d = int_field(member(e, path, "d"), path + "d", 1, 1024);
        if (!supported_head_dim(r.d))
            fail(path + "d", "= " + std::to_string(r.d) + " is not a supported head dimension",
                 "d must be one of " + supported_head_dims_text(), "use a supported head dimension");
        const std::string dt = string_field(e, path, "dtype");
        const auto t = parse_dtype(dt);
        if (!t) fail(path + "dtype", "= \"" + dt + "\" is not a dtype", "one of fp32, fp16, bf16", "use fa-sim's dtype names");
        r.dtype = *t;
        const json& causal = member(e, path, "causal");
        if (!causal.is_boolean())
            fail(path + "causal", "= " + shown(causal) + " is not a boolean", "true or false", "write true or false without quotes");
        r.causal = causal.get<bool>();
        r.batch = int_field(member(e, path, "batch"), path + "batch", 1, ProblemLimits::max_batch);
        r.heads = int_field(member(e, path, "heads"), path + "heads", 1, ProblemLimits::max_heads);
        if (auto it = e.find("kv_heads"); it != e.end()) r.kv_heads = int_field(*it, path + "kv_heads", 1, r.heads);
        check_launches(e, path);
        r.launch = measured_launch(e);  // the attention kernel's: fa1's init comes first
        if (auto l = e.find("launches"); l != e.end() && l->is_array() && !l->empty() && l->back().is_object())
            if (auto g = l->back().find("registers_per_thread"); g != l->back().end())  // a bad count is an error, not a 0
                int_field(*g, path + "launches[-1].registers_per_thread", 1, 255);
        return r;  // measured_s and predicted_s are read by the caller unless the run failed
    }

    // The launch fields the simulator reads (model/kernel_setup.cpp: measured_launch) must be whole numbers in
    // range where they are given; other fields of a launch are the writer's and are ignored.
    void check_launches(const json& e, const std::string& path) const {
        const auto l = e.find("launches");
        if (l == e.end()) return;
        if (!l->is_array())
            fail(path + "launches", "= " + shown(*l) + " is not an array", "\"launches\" must be a list of launch objects",
                 "write \"launches\": [{\"Br\": 64, \"Bc\": 64, ...}] or leave it out");
        struct Limit {
            const char* key;
            std::int64_t hi;
        };
        static constexpr Limit kLimits[] = {{"Br", 4096},           {"Bc", 4096},      {"q_splits", ProblemLimits::max_seq},
                                            {"kv_splits", ProblemLimits::max_seq}, {"threads", 1024},
                                            {"dynamic_smem_bytes", 4194304}};
        for (std::size_t i = 0; i < l->size(); ++i) {
            const json& launch = (*l)[i];
            const std::string at = path + "launches[" + std::to_string(i) + "]";
            if (!launch.is_object())
                fail(at, "= " + shown(launch) + " is not an object", "every launch is an object", "write each launch as {...}");
            for (const Limit& lim : kLimits)
                if (auto it = launch.find(lim.key); it != launch.end()) int_field(*it, at + "." + lim.key, 0, lim.hi);
            if (auto it = launch.find("registers_per_thread"); it != launch.end())
                int_field(*it, at + ".registers_per_thread", 0, 255);
        }
    }

    std::string origin_;
};

}  // namespace

MeasuredResults parse_measured_results(const std::string& text, const std::string& origin) {
    return Reader(origin).parse(text);
}

MeasuredResults read_measured_results(const std::string& path) {
    const std::string text = read_input_file(path, "measured results " + path, "a readable JSON file written by fa-validate",
                                             kMaxBytes, "fa-validate --out FILE writes one on a GPU machine");
    return parse_measured_results(text, path);
}

}  // namespace fasim::figures
