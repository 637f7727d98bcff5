#include "model/sweep.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace fasim {

const char* sweep_parameter_name(SweepParameter s) { return s == SweepParameter::Nk ? "Nk" : "N"; }
std::int64_t sweep_value(const AttentionProblem& p, SweepParameter s) { return s == SweepParameter::Nk ? p.Nk : p.N; }

std::vector<std::vector<AlgorithmResult>> run_sweep(const SweepRequest& req, const GpuSpec& gpu,
                                                    const std::function<void()>& on_done) {
    const std::size_t n_algos = req.algos.size(), total = req.ns.size() * n_algos;
    std::vector<std::vector<AlgorithmResult>> results(req.ns.size(), std::vector<AlgorithmResult>(n_algos));
    std::atomic<std::size_t> next{0};
    std::mutex mutex;  // guards first_error and on_done
    std::exception_ptr first_error;

    auto worker = [&] {
        for (std::size_t job = next++; job < total; job = next++) {
            const std::size_t i = job / n_algos, k = job % n_algos;
            AttentionProblem p = req.base;
            if (req.parameter == SweepParameter::Nk) {
                p.Nk = req.ns[i];
            } else {
                if (p.Nk == p.N) p.Nk = req.ns[i];
                p.N = req.ns[i];
            }
            try {
                results[i][k] = simulate(*req.algos[k], req.pass, p, gpu, req.tiles, req.model);
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex);
                if (!first_error) first_error = std::current_exception();
                next = total;  // stop handing out work
            }
            if (on_done) {
                std::lock_guard<std::mutex> lock(mutex);
                on_done();
            }
        }
    };
    unsigned threads = req.threads ? req.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(1, total)));
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
    worker();
    for (auto& t : pool) t.join();
    if (first_error) std::rethrow_exception(first_error);
    return results;
}

}  // namespace fasim
