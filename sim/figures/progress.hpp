// A one-line progress bar on stderr for work that may take more than a moment
// (the N sweep behind the figures).
//
//   Progress p("figures: N sweep", 32, isatty(fileno(stderr)) != 0);
//   for (...) { work(); p.tick(); }
//
// Nothing is printed unless `enabled` (the caller enables it only when stderr is a
// terminal, so logs and pipes stay clean) and at least `delay` has passed since
// construction: quick runs print nothing at all. Once the bar has been drawn, the
// line is finished with a newline when the count reaches `total` (or at
// destruction, if the work stopped early).
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace fasim::figures {

class Progress {
public:
    using Clock = std::chrono::steady_clock;

    // `out` defaults to std::cerr; tests pass a string stream and a zero delay.
    Progress(std::string label, std::int64_t total, bool enabled, std::ostream* out = nullptr,
             std::chrono::milliseconds delay = std::chrono::milliseconds(1000));
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // One unit of work done. Redraws at most ~10 times a second.
    void tick(std::int64_t n = 1);
    // Ends the line now if a bar was drawn (idempotent).
    void finish();

    std::int64_t done() const { return done_; }
    std::int64_t total() const { return total_; }
    bool shown() const { return shown_; }   // has anything been printed?

    // The bar itself, e.g. "figures: N sweep [#######.......]  12/32", width in columns.
    static std::string render(const std::string& label, std::int64_t done, std::int64_t total, int width = 28);

private:
    void draw();

    std::string label_;
    std::int64_t total_ = 0;
    std::int64_t done_ = 0;
    bool enabled_ = false;
    std::ostream* out_ = nullptr;
    Clock::time_point start_;
    Clock::time_point last_draw_{};
    std::chrono::milliseconds delay_;
    bool shown_ = false;
    bool finished_ = false;
};

}  // namespace fasim::figures
