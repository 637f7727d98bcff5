#include "cli/cli_options.hpp"

#include <CLI/CLI.hpp>
#include <cctype>
#include <algorithm>
#include <limits>

#include "common/errors.hpp"
#include "gpu/gpu_catalog.hpp"
#include "model/kernel_setup.hpp"

namespace fasim {

namespace {

const char* kExamples = R"(Examples:
  fa-sim --algo fa2 --N 4096                 the flagship report (A100-SXM4-40GB)
  fa-sim --algo all --N 16384 --gpu H100-SXM side by side, ratios vs standard
  fa-sim --algo fa1 --N 8 --d 4 --trace     Algorithm 1 step by step on a tiny problem
  fa-sim --algo all --plot figures/          SVG (and PNG) figures into figures/ (docs/figures.md)
  fa-sim --algo all --sweep N=512:65536 --csv   traffic and time vs N, for scripts
  fa-sim --algo fa2 --causal --json          machine-readable (docs/output-schema.md)
  fa-sim --list-gpus                         presets and where their numbers come from
  fa-sim --gpu-file my-gpu.json              any other GPU (docs/gpu-file.md))";

std::string trim(const std::string& s) {
    std::size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return s.substr(a, b - a);
}

// Ids are matched case-insensitively (--algo FA2, --dtype FP16), as --gpu names are.
std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// "fa2, fa1" -> {"fa2", "fa1"} (each trimmed; empty items kept, so that "fa2," can be refused).
std::vector<std::string> split_list(const std::string& s) {
    std::vector<std::string> items;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = s.find(',', start);
        items.push_back(trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return items;
}

}  // namespace

std::int64_t parse_integer(const std::string& flag, const std::string& text, std::int64_t lo, std::int64_t hi,
                           const std::string& fix) {
    const std::string t = trim(text);
    const std::string allowed = flag.substr(2) + " must be a whole number " + std::to_string(lo) + ".." + std::to_string(hi);
    std::size_t used = 0;
    long long v = 0;
    try {
        v = std::stoll(t, &used, 10);
    } catch (const std::out_of_range&) {
        throw usage_error(flag + " " + t + " is too large", allowed, fix);
    } catch (const std::exception&) {
        throw usage_error(flag + " '" + t + "' is not a whole number", allowed, fix);
    }
    if (used != t.size()) throw usage_error(flag + " '" + t + "' is not a whole number", allowed, fix);
    if (v < lo || v > hi) throw usage_error(flag + " " + t + " is out of range", allowed, fix);
    return v;
}

Sweep parse_sweep(const std::string& spec) {
    const std::string fix = "write it as --sweep N=512:65536 or --sweep Nk=1024:262144 (powers of two, smallest first)";
    const auto eq = spec.find('='), colon = spec.find(':');
    if (eq == std::string::npos || colon == std::string::npos || colon < eq)
        throw usage_error("--sweep '" + spec + "' is not of the form N=FROM:TO", "the sweep parameter is N or Nk", fix);
    const std::string name = lower(trim(spec.substr(0, eq)));  // n, N, nk, Nk, NK
    if (name != "n" && name != "nk")
        throw usage_error("--sweep parameter '" + spec.substr(0, eq) + "' is not supported",
                          "N (the query length, and the key length with it) or Nk (the key length alone) can be swept", fix);
    const std::int64_t lo = parse_integer("--sweep FROM", spec.substr(eq + 1, colon - eq - 1), 1, ProblemLimits::max_seq, fix);
    const std::int64_t hi = parse_integer("--sweep TO", spec.substr(colon + 1), 1, ProblemLimits::max_seq, fix);
    auto pow2 = [](std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; };
    if (!pow2(lo) || !pow2(hi))
        throw usage_error("--sweep " + spec + " has an end that is not a power of two", "FROM and TO must be powers of two", fix);
    if (lo > hi) throw usage_error("--sweep " + spec + " runs backwards", "FROM must be at most TO", fix);
    Sweep s;
    s.parameter = name == "nk" ? SweepParameter::Nk : SweepParameter::N;
    for (std::int64_t n = lo; n <= hi; n *= 2) s.values.push_back(n);
    return s;
}

namespace {

// --kernel NAME: the catalog row's algorithm, tiles, products and registers (model/kernel_setup.hpp).
// --Br/--Bc, --q-splits, --kv-splits and --registers given as well are what a run recorded (cuda/scripts pass a
// measured run's launch this way): they win, and with tiles of one's own the catalog's register count
// (measured with the kernel's tiles) no longer applies. --tile-addresses says how a run's tile copies took their
// addresses (fa-validate's "tile_addresses"; runs before 2026-11-30 copied per chunk); without it, the catalog's.
void apply_kernel(CliOptions& o, const std::string& name, const std::string* algo, bool cuda_cores, bool matmul,
                  const std::string& tile_addresses) {
    const KernelVariant* k = find_kernel(lower(trim(name)));
    if (!k)
        throw usage_error("--kernel '" + name + "' is not in the kernel catalog", "choose " + kernel_names(),
                          "e.g. --kernel fa2_tc (fa-sim --list-kernels)");
    if (algo && lower(trim(*algo)) != k->algorithm)
        throw usage_error("--kernel " + name + " implements " + std::string(k->algorithm) + ", not --algo " + *algo,
                          "--kernel picks its own algorithm", "drop --algo");
    if (cuda_cores || matmul)
        throw usage_error("--kernel " + name + " was combined with " + (cuda_cores ? "--cuda-cores" : "--matmul"),
                          "the kernel decides how it multiplies matrices (" + std::string(products_name(k->products)) + ")",
                          "drop " + std::string(cuda_cores ? "--cuda-cores" : "--matmul"));
    if (const std::string why = k->unsupported(o.problem.dtype, static_cast<int>(o.problem.d)); !why.empty())
        throw UsageError(why);
    if (o.gpu.compute_capability > 0 && o.gpu.compute_capability < k->min_compute_capability)
        throw usage_error("--kernel " + name + " needs compute capability " + std::to_string(k->min_compute_capability / 10) +
                              "." + std::to_string(k->min_compute_capability % 10) + " or higher",
                          o.gpu.name + " is " + std::to_string(o.gpu.compute_capability / 10) + "." +
                              std::to_string(o.gpu.compute_capability % 10),
                          "pick a newer --gpu, or --kernel " + std::string(k->algorithm) + " (its CUDA-core kernel)");
    bool one_address_per_tile = k->one_address_per_tile;
    if (!tile_addresses.empty()) {
        const std::string a = lower(trim(tile_addresses));
        if (a != "one_per_tile" && a != "per_chunk")
            throw usage_error("--tile-addresses '" + tile_addresses + "' is not a way to copy tiles",
                              "one_per_tile (one address per whole tile) or per_chunk (one per 16-byte chunk)",
                              "pass what fa-validate recorded as \"tile_addresses\" (per_chunk where a run has none)");
        one_address_per_tile = a == "one_per_tile";
    }
    const MeasuredLaunch given{.Br = o.tiles.Br.value_or(0),
                               .Bc = o.tiles.Bc.value_or(0),
                               .q_splits = o.tiles.q_splits,
                               .registers_per_thread = o.tiles.registers_per_thread,
                               .kv_splits = o.tiles.kv_splits,
                               .one_address_per_tile = one_address_per_tile};
    const KernelSetup s = kernel_setup(*k, o.problem, o.gpu, given);
    o.kernel = k;
    o.algos = {s.algorithm};
    o.model = s.options;
    TileRequest t = s.tiles;
    t.one_address_per_tile = one_address_per_tile;  // also where no other launch figure was given
    if (o.tiles.Br || o.tiles.Bc) {  // the user's tiles, even one of the two
        if (o.tiles.Br) t.Br = o.tiles.Br;
        if (o.tiles.Bc) t.Bc = o.tiles.Bc;
        t.tile_source.clear();
    }
    if (o.tiles.q_splits) t.q_splits = o.tiles.q_splits;
    if (o.tiles.registers_per_thread) t.registers_source.clear();  // --registers
    o.tiles = t;
}

}  // namespace

CliOptions parse_cli(int argc, const char* const* argv) {
    CliOptions o;
    CLI::App app{"fa-sim: an educational GPU memory simulator for attention.\n"
                 "Counts the bytes standard, tiled, FlashAttention-1 and FlashAttention-2 attention move through\n"
                 "HBM, L2, DRAM and shared memory, their FLOPs, occupancy and waves, and predicts their runtime.",
                 "fa-sim"};
    app.footer(kExamples);
    std::string algo = "fa2", n = "4096", nk, d = "64", heads = "16", batch = "1", dtype = "fp16";
    std::string gpu_name, gpu_file, br, bc, q_splits, registers, matmul = "tiled", sweep, seed = "1", plot_dir, measured;
    std::string kv_heads, kv_splits, dq;
    // Which algorithms take an option, from the registry: "tiled/fa1/fa2".
    auto ids_with = [](bool Algorithm::*capability, const char* separator) {
        std::string s;
        for (const Algorithm* a : algorithms(Pass::forward))
            if (a->*capability) s += (s.empty() ? "" : separator) + std::string(a->id);
        return s;
    };
    app.add_option("--algo", algo, algorithm_ids(", ") + ", a comma-separated list of them (e.g. fa2,fa1) or all "
                                   "(default fa2; --list-algos; case does not matter)")
        ->type_name("ALGO[,ALGO...]");
    std::string pass = "fwd";
    app.add_option("--pass", pass, "fwd (default), bwd (the backward pass: dQ, dK, dV from dO) or fwd+bwd (training: both, "
                                   "one after the other; with --plot the training figures)")
        ->type_name("PASS");
    app.add_option("--N", n, "query sequence length, 1..16777216 (default 4096)")->type_name("INT");
    app.add_option("--Nk", nk, "key sequence length, 1..16777216 (default: N, self-attention)")->type_name("INT");
    app.add_option("--d", d, "head dimension: " + supported_head_dims_text() + " (default 64)")->type_name("INT");
    app.add_option("--heads", heads, "attention heads, 1.." + limit_text(ProblemLimits::max_heads) + " (default 16)")
        ->type_name("INT");
    app.add_option("--batch", batch, "batch size, 1.." + limit_text(ProblemLimits::max_batch) + "; batch*heads <= " +
                                         limit_text(ProblemLimits::max_batch_heads) + " (default 1)")
        ->type_name("INT");
    app.add_option("--kv-heads", kv_heads,
                   "K/V heads, a divisor of --heads: grouped-query attention (1: multi-query); default: --heads. For " +
                       ids_with(&Algorithm::grouped_kv, ", "))
        ->type_name("INT");
    app.add_option("--dtype", dtype, "storage precision: fp32, fp16 or bf16 (default fp16)")->type_name("DTYPE");
    app.add_flag("--causal", o.problem.causal, "causal mask (bottom-right aligned)");
    app.add_option("--gpu", gpu_name, "GPU preset (default " + default_gpu_name() + "; see --list-gpus)")->type_name("NAME");
    app.add_option("--gpu-file", gpu_file, "describe another GPU in a JSON file (docs/gpu-file.md)")->type_name("FILE");
    app.add_option("--Br", br, "Q-tile rows for " + ids_with(&Algorithm::tunable_tiles, "/") + ", 1..4096 (default: the paper's choice)")
        ->type_name("INT");
    app.add_option("--Bc", bc, "K/V-tile rows for " + ids_with(&Algorithm::tunable_tiles, "/") + ", 1..4096 (default: the paper's choice)")
        ->type_name("INT");
    app.add_option("--q-splits", q_splits,
                   ids_with(&Algorithm::q_splits, ", ") + " only: blocks per batch*head, 1..ceil(N/Br); each takes every q-splits-th Q tile and reads the "
                   "K/V tiles they see itself (FlashAttention-1's num_splits; default 1, Algorithm 1's one block)")
        ->type_name("INT");
    app.add_option("--kv-splits", kv_splits,
                   ids_with(&Algorithm::kv_splits, ", ") + " only: blocks the keys of each row group are split over, 1..ceil(Nk/Bc) "
                   "(default: flash-attention's heuristic, which fills the SMs)")
        ->type_name("INT");
    std::string dq_ids;  // the backward programs with the choice: "fa2"
    for (const Algorithm* a : algorithms(Pass::backward))
        if (a->dq_modes) dq_ids += (dq_ids.empty() ? "" : ", ") + std::string(a->family);
    app.add_option("--dq", dq,
                   dq_ids + " with --pass bwd or fwd+bwd: how dQ is summed over the K/V blocks, atomic (default: fp32 atomic "
                   "adds, then a conversion, as flash-attention does) or separate (a kernel of its own per Q tile "
                   "recomputes S, P and dP; no atomics)")
        ->type_name("MODE");
    app.add_option("--registers", registers,
                   "registers per thread of the kernel being modelled (what ptxas -v reports), 1..255: occupancy uses it "
                   "instead of the estimate from the register-resident tiles")
        ->type_name("INT");
    app.add_option("--matmul", matmul,
                   "standard attention's matrix products: tiled (default, 64x64 tiles), naive, or library (cuBLAS-like: "
                   "32768-element tiles for fp16/bf16, 64x64 for fp32)")
        ->type_name("MODE");
    std::string count = "class";
    app.add_option("--count", count,
                   "how the counting runs: class (default: one block and one loop iteration of each class of alike ones, "
                   "counted by multiplicity; milliseconds at any N) or block (every block and iteration, as the traces "
                   "run them; the same counts, slower)")
        ->type_name("PATH");
    bool cuda_cores = false;
    app.add_flag("--cuda-cores", cuda_cores,
                 "model fa-sim's own CUDA-core kernels: every matrix product on the CUDA cores (no tensor cores), S/P staged in shared memory");
    app.add_flag("--json", o.json, "print JSON (schema: docs/output-schema.md)");
    app.add_flag("--csv", o.csv, "print CSV, one row per algorithm (and N)");
    app.add_flag("--list-gpus", o.list_gpus, "list GPU presets with the sources of their numbers");
    app.add_flag("--list-algos", o.list_algos, "list the algorithms, one line each: id and title");
    std::string kernel;
    app.add_option("--kernel", kernel,
                   "model one kernel of the catalog as it runs (its algorithm, tiles, products and registers), e.g. "
                   "fa2_tc; --list-kernels shows them")
        ->type_name("NAME");
    std::string tile_addresses;
    app.add_option("--tile-addresses", tile_addresses,
                   "with --kernel: how its tile copies take their addresses, one_per_tile or per_chunk (what fa-validate "
                   "records as tile_addresses; default: the catalog's, how the kernel copies today)")
        ->type_name("HOW");
    app.add_flag("--list-kernels", o.list_kernels, "list the kernel catalog (with --json: as JSON, for scripts)");
    app.add_option("--sweep", sweep, "sweep N (or Nk) over powers of two, e.g. N=512:65536")->type_name("N=FROM:TO");
    app.add_option("--plot", plot_dir, "write the figures (SVG, and PNG where rsvg-convert exists) into DIR, which must "
                   "exist (default fa-sim-plots, created when missing); --sweep sets the N range of the sweeps")
        ->expected(0, 1)
        ->type_name("[DIR]");
    app.add_option("--measured", measured, "with --plot: fa-validate results (JSON) for the predicted-vs-measured figure")
        ->type_name("FILE");
    app.add_flag("--trace", o.trace,
                 "run the tile program on real numbers and print every step, then compare with exact attention "
                 "(tiny problems: N, Nk <= 64; --heads defaults to 1 with --trace)");
    app.add_option("--seed", seed, "seed of the random Q, K, V for --trace, 0..2^63-1 (default 1)")->type_name("INT");
    app.add_flag("--version", o.version, "print fa-sim's version (and the git commit it was built from) and exit");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp&) {
        o.help = true;
        o.help_text = app.help();
        return o;
    } catch (const CLI::ParseError& e) {
        throw usage_error(std::string(e.what()), "see the options in fa-sim --help", "correct the command line");
    }
    if (o.version) return o;
    o.model.tensor_cores = !cuda_cores;
    if (app.count("--plot")) {
        o.plot_dir_is_default = plot_dir.empty();
        o.plot_dir = plot_dir.empty() ? std::string(kDefaultPlotDir) : plot_dir;
    }
    if (!measured.empty()) {
        if (!o.plot_dir)
            throw usage_error("--measured " + measured + " was given without --plot", "it feeds the predicted-vs-measured figure",
                              "add --plot DIR");
        o.measured = measured;
    }

    const std::string pass_id = lower(trim(pass));
    if (pass_id == "fwd") o.pass = PassSelection::fwd;
    else if (pass_id == "bwd") o.pass = PassSelection::bwd;
    else if (pass_id == "fwd+bwd") o.pass = PassSelection::fwd_bwd;
    else throw usage_error("--pass '" + pass + "' is not a pass", "choose fwd, bwd or fwd+bwd", "e.g. --pass fwd+bwd");
    // --algo: one id, a comma-separated list of forward ids (fa-validate's form), or all.
    const std::vector<std::string> algo_items = split_list(lower(algo));
    const std::string algo_choices = "choose " + algorithm_ids(", ") + ", a comma-separated list of them, or all";
    for (const std::string& item : algo_items)
        if (item.empty())
            throw usage_error("--algo '" + algo + "' has an empty name in its list", algo_choices, "e.g. --algo fa2,fa1");
    if (algo_items.size() == 1 && algo_items.front() == "all") {
        o.all = true;
        o.algos = compared_algorithms(Pass::forward);
        if (o.pass != PassSelection::fwd)  // those with a backward pass
            std::erase_if(o.algos, [](const Algorithm* a) { return backward_of(*a) == nullptr; });
    } else {
        o.algos.clear();
        for (const std::string& item : algo_items) {
            if (item == "all")
                throw usage_error("--algo '" + algo + "' lists all beside other algorithms", algo_choices,
                                  "pass --algo all alone, or list the algorithms you want");
            const Algorithm* a = find_algorithm(item);
            if (!a)
                throw usage_error("--algo '" + (algo_items.size() == 1 ? algo : item) + "' is not an algorithm", algo_choices,
                                  "e.g. --algo fa2 (fa-sim --list-algos)");
            if (a->pass == Pass::backward) {  // --algo fa2_bwd: fa2's backward pass
                if (algo_items.size() > 1)
                    throw usage_error("--algo '" + algo + "' lists the backward pass " + item + " with other algorithms",
                                      "a list names forward algorithms; --pass picks their passes",
                                      "use --algo " + std::string(a->family) + ",... --pass bwd");
                if (app.count("--pass") && o.pass == PassSelection::fwd)
                    throw usage_error("--algo " + item + " is a backward pass, and --pass fwd was given", "fa-sim runs " + item +
                                      " with --pass bwd or fwd+bwd", "use --algo " + std::string(a->family) + " --pass fwd, or drop --pass");
                a = &algorithm(a->family);
                if (!app.count("--pass")) o.pass = PassSelection::bwd;
            }
            if (std::find(o.algos.begin(), o.algos.end(), a) == o.algos.end()) o.algos.push_back(a);
        }
    }

    AttentionProblem& p = o.problem;
    p.N = parse_integer("--N", n, 1, ProblemLimits::max_seq, "pass a sequence length between 1 and 16777216 (2^24)");
    p.Nk = nk.empty() ? p.N
                      : parse_integer("--Nk", nk, 1, ProblemLimits::max_seq,
                                      "pass a key length between 1 and 16777216, or omit --Nk for self-attention");
    p.d = parse_integer("--d", d, 1, 1024, "pick one of " + supported_head_dims_text());
    if (o.trace && app.count("--heads") == 0) heads = "1";  // documented in --help
    p.heads = parse_integer("--heads", heads, 1, ProblemLimits::max_heads,
                            "pass 1.." + limit_text(ProblemLimits::max_heads) + " heads");
    p.batch = parse_integer("--batch", batch, 1, ProblemLimits::max_batch,
                            "pass a batch size of 1.." + limit_text(ProblemLimits::max_batch) + " (batch*heads at most " +
                                limit_text(ProblemLimits::max_batch_heads) + ")");
    if (!kv_heads.empty())
        p.kv_heads = parse_integer("--kv-heads", kv_heads, 1, ProblemLimits::max_heads,
                                   "pass a divisor of --heads, e.g. --kv-heads 8 for 32 heads (1: multi-query attention)");
    if (o.all && p.kv_heads > 0 && p.kv_heads != p.heads)  // --algo all: those that model grouped K/V heads
        std::erase_if(o.algos, [](const Algorithm* a) { return !a->grouped_kv; });
    if (auto t = parse_dtype(lower(trim(dtype)))) p.dtype = *t;
    else throw usage_error("--dtype '" + dtype + "' is not supported", "dtype must be fp32, fp16 or bf16", "e.g. --dtype fp16");
    validate(p);

    if (!gpu_name.empty() && !gpu_file.empty())
        throw usage_error("--gpu " + gpu_name + " and --gpu-file " + gpu_file + " were both given",
                          "one GPU per run", "pass only one of them");
    o.gpu = !gpu_file.empty() ? load_gpu_file(gpu_file) : find_gpu_preset(gpu_name.empty() ? default_gpu_name() : gpu_name);

    if (!br.empty()) o.tiles.Br = parse_integer("--Br", br, 1, 4096, "pass a tile size such as 64 or 128");
    if (!bc.empty()) o.tiles.Bc = parse_integer("--Bc", bc, 1, 4096, "pass a tile size such as 64 or 128");
    // The upper bound, Tr = ceil(N/Br), depends on the tiles: choose_tiles checks it.
    if (!q_splits.empty())
        o.tiles.q_splits = parse_integer("--q-splits", q_splits, 1, ProblemLimits::max_seq,
                                         "pass 1 (one block per batch*head, the default) up to ceil(N/Br), the number of "
                                         "fa1's Q tiles, e.g. --q-splits 2");
    if (!kv_splits.empty())
        o.tiles.kv_splits = parse_integer("--kv-splits", kv_splits, 1, ProblemLimits::max_seq,
                                          "pass 1 (no split) up to ceil(Nk/Bc), e.g. --kv-splits 8, or omit it for the heuristic");
    if (!registers.empty())
        o.tiles.registers_per_thread = static_cast<int>(parse_integer(
            "--registers", registers, 1, 255, "pass the count ptxas -v prints for the kernel, e.g. --registers 128"));
    const std::string count_id = lower(trim(count));
    if (count_id == "block") o.model.count_every_block = true;
    else if (count_id != "class")
        throw usage_error("--count '" + count + "' is not a counting path", "choose class or block", "e.g. --count block");
    const std::string matmul_id = lower(trim(matmul));
    if (matmul_id == "tiled") o.tiles.matmul = MatmulMode::tiled;
    else if (matmul_id == "naive") o.tiles.matmul = MatmulMode::naive;
    else if (matmul_id == "library") o.tiles.matmul = MatmulMode::library;
    else throw usage_error("--matmul '" + matmul + "' is not a matmul mode", "choose tiled, naive or library",
                           "e.g. --matmul naive");

    if (!dq.empty()) {
        const std::string dq_id = lower(trim(dq));
        if (dq_id == "atomic") o.tiles.dq = DqMode::atomic;
        else if (dq_id == "separate") o.tiles.dq = DqMode::separate;
        else throw usage_error("--dq '" + dq + "' is not a dQ mode", "choose atomic or separate", "e.g. --dq separate");
    }

    if (!tile_addresses.empty() && kernel.empty())
        throw usage_error("--tile-addresses " + tile_addresses + " was given without --kernel",
                          "it says how one catalog kernel copied its tiles", "add --kernel NAME, or drop --tile-addresses");
    if (!kernel.empty())
        apply_kernel(o, kernel, app.count("--algo") ? &algo : nullptr, cuda_cores, app.count("--matmul") > 0, tile_addresses);

    if (!sweep.empty()) {
        const Sweep s = parse_sweep(sweep);
        o.sweep_n = s.values;
        o.sweep_parameter = s.parameter;
    }
    // --algo all: the decoding algorithms join on decode shapes (fewer queries than keys, or a sweep of Nk).
    if (o.all && (p.N >= p.Nk || o.plot_dir) && o.sweep_parameter != SweepParameter::Nk)
        std::erase_if(o.algos, [](const Algorithm* a) { return a->decoding; });
    o.seed = static_cast<std::uint64_t>(parse_integer("--seed", seed, 0, std::numeric_limits<std::int64_t>::max(), "pass a whole number"));
    if (o.trace) {
        if (o.all || o.algos.size() != 1 || !o.sweep_n.empty() || o.json || o.csv || o.plot_dir)
            throw usage_error("--trace was combined with --algo all, --sweep, --plot, --json or --csv",
                              "--trace follows one algorithm on one problem", "pick one --algo and drop the others");
        if (p.N > 64 || p.Nk > 64 || p.batch_heads() > 4)
            throw usage_error("--trace with N=" + std::to_string(p.N) + ", Nk=" + std::to_string(p.Nk) + ", batch*heads=" +
                                  std::to_string(p.batch_heads()) + " would print too many steps",
                              "--trace needs N, Nk <= 64 and batch*heads <= 4", "e.g. --N 8 --d 4 --heads 1");
    }
    if (o.pass != PassSelection::fwd && o.kernel)
        throw usage_error("--pass " + pass + " was combined with --kernel", "a kernel of the catalog is one pass",
                          "name the backward kernel itself (e.g. --kernel fa2_bwd_tc; --list-kernels) and drop --pass");
    if (o.pass != PassSelection::fwd && !o.all)
        for (const Algorithm* a : o.algos) (void)backward_program(*a);  // no backward: said now, on one line
    if (o.tiles.dq == DqMode::separate) {
        if (o.pass == PassSelection::fwd)
            throw usage_error("--dq separate was given for the forward pass", "--dq chooses how the backward sums dQ",
                              "add --pass bwd or --pass fwd+bwd, or drop --dq");
        if (std::none_of(o.algos.begin(), o.algos.end(), [](const Algorithm* a) { return backward_program(*a).dq_modes; }))
            throw usage_error("--dq separate does not apply to --algo " + algo, "only " + dq_ids + "'s backward has a dQ choice",
                              "use --algo " + dq_ids + ", or drop --dq");
    }
    if (o.tiles.q_splits > 1 && o.plot_dir)
        throw usage_error("--q-splits " + std::to_string(o.tiles.q_splits) + " was combined with --plot",
                          "the figures follow the papers' grids (fa1: one block per batch*head)", "drop --q-splits");
    if (o.sweep_parameter == SweepParameter::Nk && o.plot_dir)
        throw usage_error("--sweep " + sweep + " was combined with --plot", "the figures sweep N (and Nk with it)",
                          "use --sweep N=FROM:TO with --plot, or drop --plot");
    if (o.tiles.kv_splits > 0 && o.plot_dir)
        throw usage_error("--kv-splits " + std::to_string(o.tiles.kv_splits) + " was combined with --plot",
                          "the figures use each algorithm's own grid", "drop --kv-splits");
    if (o.json && o.csv) throw usage_error("--json and --csv were both given", "one output format per run", "pass only one");
    return o;
}

}  // namespace fasim
