// `fa-sim --algo fa1 --N 8 --d 4 --trace` is deterministic and matches its golden file.
// Regenerate after an intended change: FASIM_UPDATE_GOLDEN=1 ctest -R trace
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "../cli/run_command.hpp"

using namespace fasim::test;

TEST_CASE("the FA1 trace of a tiny problem matches the golden output", "[trace][golden]") {
    const std::string golden = std::string(FASIM_SOURCE_DIR) + "/tests/functional/golden/trace_fa1_N8_d4.txt";
    const auto r = run_command(fa_sim("--algo fa1 --N 8 --d 4 --trace"));
    REQUIRE(r.exit_code == 0);
    if (std::getenv("FASIM_UPDATE_GOLDEN")) std::ofstream(golden) << r.out;
    CHECK(r.out == slurp(golden));
    CHECK(r.out.find("equals exact attention") != std::string::npos);
}

TEST_CASE("traces are deterministic for every algorithm", "[trace]") {
    for (const char* algo : {"standard", "tiled", "fa1", "fa2"}) {
        const std::string cmd = fa_sim(std::string("--algo ") + algo + " --N 12 --Nk 9 --d 8 --causal --dtype bf16 --trace");
        const auto a = run_command(cmd), b = run_command(cmd);
        CAPTURE(algo, a.err);
        CHECK(a.exit_code == 0);
        CHECK(a.out == b.out);
        CHECK(a.out.find("equals exact attention") != std::string::npos);
    }
}
