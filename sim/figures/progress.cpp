#include "figures/progress.hpp"

#include <algorithm>
#include <iostream>

namespace fasim::figures {

Progress::Progress(std::string label, std::int64_t total, bool enabled, std::ostream* out,
                   std::chrono::milliseconds delay)
    : label_(std::move(label)),
      total_(std::max<std::int64_t>(total, 0)),
      enabled_(enabled),
      out_(out ? out : &std::cerr),
      start_(Clock::now()),
      delay_(delay) {}

Progress::~Progress() { finish(); }

std::string Progress::render(const std::string& label, std::int64_t done, std::int64_t total, int width) {
    const std::int64_t d = std::clamp<std::int64_t>(done, 0, std::max<std::int64_t>(total, 0));
    const int filled = total > 0 ? static_cast<int>(d * width / total) : width;
    std::string bar = label + " [";
    bar.append(static_cast<std::size_t>(filled), '#');
    bar.append(static_cast<std::size_t>(width - filled), '.');
    bar += "] " + std::to_string(d) + "/" + std::to_string(total);
    return bar;
}

void Progress::draw() {
    *out_ << '\r' << render(label_, done_, total_) << std::flush;
    shown_ = true;
    last_draw_ = Clock::now();
}

void Progress::tick(std::int64_t n) {
    done_ += n;
    if (!enabled_ || finished_) return;
    const auto now = Clock::now();
    if (!shown_ && now - start_ < delay_) return;
    if (done_ >= total_) {
        draw();
        finish();
        return;
    }
    if (!shown_ || now - last_draw_ >= std::chrono::milliseconds(100)) draw();
}

void Progress::finish() {
    if (finished_) return;
    finished_ = true;
    if (shown_) *out_ << '\n' << std::flush;
}

}  // namespace fasim::figures
