// JSON and CSV output. The schema is versioned (kSchemaVersion) and documented in
// docs/output-schema.md; keys are only ever added within a version.
#include <sstream>

#include "report/report.hpp"

namespace fasim {

namespace {

using nlohmann::json;

json level_json(const LevelTraffic& t) {
    json by_tensor = json::object();
    for (const TensorBytes& b : t.tensors) {
        if (b.read == 0 && b.write == 0) continue;
        by_tensor[b.name] = {{"read_bytes", b.read}, {"write_bytes", b.write}};
    }
    return {{"read_bytes", t.read_bytes()}, {"write_bytes", t.write_bytes()}, {"by_tensor", by_tensor}};
}

json kernel_json(const KernelRecord& k, const KernelTiming& t) {
    return {{"name", k.desc.name},
            {"role", k.desc.role},
            {"grid", k.desc.grid()},
            {"blocks_per_head", k.desc.blocks_per_head},
            {"warps_per_block", k.desc.warps},
            {"smem_bytes_per_block", k.smem_bytes_per_block},
            {"registers_per_thread", k.registers_per_thread},
            {"register_spill", k.register_spill},
            {"blocks_per_sm", k.occupancy.blocks_per_sm},
            {"occupancy_limiter", k.occupancy.limiter},
            {"warp_occupancy", k.occupancy.warp_occupancy},
            {"concurrent_blocks", t.concurrent_blocks},
            {"waves", t.waves},
            {"idle_sms", t.idle_sms},
            {"sm_busy_fraction", t.sm_busy_fraction},
            {"issue_fraction", t.issue_fraction},
            {"issue_law", issue_law_name(t.issue_law)},
            {"hbm", level_json(k.hbm)},
            {"l2", level_json(k.l2)},
            {"dram", level_json(k.dram)},
            {"smem", {{"read_bytes", k.smem_read}, {"write_bytes", k.smem_write}}},
            {"flops", {{"matmul", k.matmul_flops}, {"nonmatmul", k.nonmatmul_flops}, {"sfu_ops", k.sfu_ops}}},
            {"barriers", k.barriers},
            {"warp_instructions", k.warp_instructions},
            {"smem_wavefronts", k.smem_wavefronts},
            {"l2_requests", {{"read", k.l2_read_requests}, {"write", k.l2_write_requests}}},
            {"lane_matmul_flops", k.lane_matmul_flops},
            {"registers_given", k.registers_given},
            {"row_blocks_per_warp", k.row_blocks_per_warp},
            {"active_warps", k.active_warps},
            {"time",
             {{"matmul_s", t.matmul_s},
              {"issue_s", t.issue_s},
              {"memory_latency_s", t.memory_latency_s},
              {"warp_chain_s", t.warp_chain_s},
              {"fill_s", t.fill_s},
              {"nonmatmul_s", t.nonmatmul_s},
              {"sfu_s", t.sfu_s},
              {"smem_s", t.smem_s},
              {"l2_per_sm_s", t.l2_per_sm_s},
              {"schedule_s", t.schedule_s},
              {"schedule_bound_s", t.schedule_bound_s},
              {"dram_s", t.dram_s},
              {"l2_s", t.l2_s},
              {"l2_requests_s", t.l2_requests_s},
              {"launch_s", t.launch_s},
              {"predicted_s", t.total_s},
              {"bound", t.bound}}}};
}

}  // namespace

json gpu_json(const GpuSpec& g) {
    return {{"name", g.name},
            {"sm_count", g.sm_count},
            {"smem_per_block_bytes", g.smem_per_block_bytes},
            {"smem_per_sm_bytes", g.smem_per_sm_bytes},
            {"l2_bytes", g.l2_bytes},
            {"hbm_bytes", g.hbm_bytes},
            {"hbm_bandwidth_bytes_per_s", g.effective_hbm_bandwidth()},
            {"l2_bandwidth_bytes_per_s", g.l2_bandwidth},
            {"l2_requests_per_s", g.l2_request_rate()},
            {"fp32_flops_per_s", g.effective_fp32_flops()},
            {"tensor_fp16_flops_per_s", g.matmul_flops(DType::fp16)},
            {"tensor_bf16_flops_per_s", g.matmul_flops(DType::bf16)}};
}

json problem_json(const AttentionProblem& p) {
    return {{"batch", p.batch}, {"heads", p.heads}, {"N", p.N},       {"Nk", p.Nk},
            {"d", p.d},         {"dtype", dtype_name(p.dtype)}, {"causal", p.causal}, {"kv_heads", p.kv_head_count()}};
}

json algorithm_json(const AlgorithmResult& r, const AlgorithmResult* standard) {
    json kernels = json::array();
    for (std::size_t i = 0; i < r.kernels.size(); ++i) kernels.push_back(kernel_json(r.kernels[i], r.timing[i]));
    json j = {{"algo", std::string(family_of(*r.algo))},
              {"title", std::string((r.forward ? r.forward : r.algo)->title)},
              {"tiles",
               {{"Br", r.tiles.Br},
                {"Bc", r.tiles.Bc},
                {"M_elements", r.tiles.M_elements},
                {"matmul", matmul_name(r.tiles.matmul)},
                {"smem_bytes_per_block", r.tiles.smem_bytes},
                {"reasons", r.tiles.reasons}}},
              {"hbm", level_json(r.hbm)},
              {"l2", level_json(r.l2)},
              {"dram", level_json(r.dram)},
              {"smem", {{"read_bytes", r.smem_read}, {"write_bytes", r.smem_write}}},
              {"flops",
               {{"matmul", r.matmul_flops},
                {"nonmatmul", r.nonmatmul_flops},
                {"sfu_ops", r.sfu_ops},
                {"ideal_matmul", r.ideal_matmul_flops}}},
              {"barriers", r.barriers},
              {"arithmetic_intensity", r.arithmetic_intensity()},
              {"memory", {{"global_bytes", r.global_bytes}, {"fits_in_hbm", r.fits_in_hbm}}},
              {"time", {{"predicted_s", r.time_s}, {"matmul_flops_per_s", r.achieved_flops()}}},
              {"kernels", kernels}};
    if (r.tiles.q_splits > 1) j["tiles"]["q_splits"] = r.tiles.q_splits;  // absent when 1: that output is unchanged
    if (r.algo->kv_splits) j["tiles"]["kv_splits"] = r.tiles.kv_splits;
    if (r.algo->dq_modes) j["tiles"]["dq"] = dq_name(r.tiles.dq);  // a backward with the choice (--dq)
    if (r.pass != PassSelection::fwd) {  // keys of the backward; a forward's output is unchanged
        j["pass"] = pass_name(r.pass);
        j["programs"] = r.forward ? json{std::string(r.forward->id), std::string(r.algo->id)} : json{std::string(r.algo->id)};
        if (r.forward_tiles)
            j["forward_tiles"] = {{"Br", r.forward_tiles->Br}, {"Bc", r.forward_tiles->Bc}, {"smem_bytes_per_block", r.forward_tiles->smem_bytes},
                                  {"reasons", r.forward_tiles->reasons}};
        j["memory"]["held_between_passes_bytes"] = r.held_between_passes_bytes;
        j["flops"]["recomputed_matmul"] = r.recomputed_matmul_flops;
    }
    if (standard && standard != &r) {
        auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
        j["vs_standard"] = {{"hbm_bytes_ratio", ratio(static_cast<double>(r.hbm.total()), static_cast<double>(standard->hbm.total()))},
                            {"dram_bytes_ratio", ratio(static_cast<double>(r.dram.total()), static_cast<double>(standard->dram.total()))},
                            {"speedup", ratio(standard->time_s, r.time_s)}};
    }
    return j;
}

json report_json(const std::vector<AlgorithmResult>& rs, const GpuSpec& gpu) {
    const AlgorithmResult* standard = nullptr;
    for (const auto& r : rs)
        if (r.algo->baseline) standard = &r;
    json algos = json::array();
    for (const auto& r : rs) algos.push_back(algorithm_json(r, standard));
    return {{"schema_version", kSchemaVersion},
            {"gpu", gpu_json(gpu)},
            {"problem", rs.empty() ? json::object() : problem_json(rs.front().problem)},
            {"algorithms", algos}};
}

json sweep_json(const std::vector<std::vector<AlgorithmResult>>& by_n, const GpuSpec& gpu, SweepParameter parameter) {
    json values = json::array(), runs = json::array();
    for (const auto& rs : by_n) {
        if (rs.empty()) continue;
        values.push_back(sweep_value(rs.front().problem, parameter));
        json run = report_json(rs, gpu);
        run.erase("gpu");
        run.erase("schema_version");
        runs.push_back(run);
    }
    return {{"schema_version", kSchemaVersion},
            {"gpu", gpu_json(gpu)},
            {"sweep", {{"parameter", sweep_parameter_name(parameter)}, {"values", values}}},
            {"runs", runs}};
}

json catalog_json() {
    json algos = json::array();
    for (const Algorithm* a : algorithms())
        algos.push_back({{"id", std::string(a->id)},
                         {"title", std::string(a->title)},
                         {"tunable_tiles", a->tunable_tiles},
                         {"q_splits", a->q_splits},
                         {"matmul_modes", a->matmul_modes},
                         {"grouped_kv", a->grouped_kv},
                         {"kv_splits", a->kv_splits},
                         {"decoding", a->decoding}});
    json kernels = json::array();
    for (const KernelVariant& k : kernel_catalog()) {
        json dtypes = k.fp32 ? json{"fp32", "fp16", "bf16"} : json{"fp16", "bf16"};
        json dims = json::array();
        for (int d : k.head_dims)
            if (d > 0) dims.push_back(d);
        kernels.push_back({{"name", std::string(k.name)},
                           {"algorithm", std::string(k.algorithm)},
                           {"what", std::string(k.what)},
                           {"source", std::string(k.source)},
                           {"in_repository", k.in_repository},
                           {"products", products_name(k.products)},
                           {"fp32_on_cuda_cores", k.fp32_on_cuda_cores},
                           {"matmul", matmul_name(k.matmul)},
                           {"tiles", tile_rule_name(k.tiles)},
                           {"dtypes", dtypes},
                           {"head_dims", dims},
                           {"min_compute_capability", k.min_compute_capability},
                           {"registers", {{"d64", k.registers[0]}, {"d128", k.registers[1]}}},
                           {"calibration", calibration_text(k.calibration)},
                           {"forward_kernel", std::string(k.forward_kernel)},
                           {"warps", k.warps},
                           {"grouped_kv", k.grouped_kv}});
    }
    return {{"schema_version", kSchemaVersion}, {"algorithms", algos}, {"kernels", kernels}};
}

std::string csv_header() {
    return "schema_version,gpu,algo,batch,heads,N,Nk,d,dtype,causal,Br,Bc,hbm_read_bytes,hbm_write_bytes,"
           "l2_read_bytes,l2_write_bytes,dram_read_bytes,dram_write_bytes,smem_read_bytes,smem_write_bytes,"
           "matmul_flops,nonmatmul_flops,sfu_ops,predicted_s,bound,kv_heads,dq";
}

std::string csv_row(const AlgorithmResult& r) {
    const AttentionProblem& p = r.problem;
    const KernelTiming& longest = r.longest_kernel();
    const std::string bound = longest.name + ": " + longest.bound;
    std::ostringstream s;
    s.precision(9);
    // The programs run: "fa2", "fa2_bwd", "fa2+fa2_bwd".
    const std::string algo = r.forward ? std::string(r.forward->id) + "+" + std::string(r.algo->id) : std::string(r.algo->id);
    s << kSchemaVersion << ',' << r.gpu_name << ',' << algo << ',' << p.batch << ',' << p.heads << ','
      << p.N << ',' << p.Nk << ',' << p.d << ',' << dtype_name(p.dtype) << ',' << (p.causal ? 1 : 0) << ','
      << r.tiles.Br << ',' << r.tiles.Bc << ',' << r.hbm.read_bytes() << ',' << r.hbm.write_bytes() << ','
      << r.l2.read_bytes() << ',' << r.l2.write_bytes() << ',' << r.dram.read_bytes() << ',' << r.dram.write_bytes()
      << ',' << r.smem_read << ',' << r.smem_write << ',' << r.matmul_flops << ',' << r.nonmatmul_flops << ','
      << r.sfu_ops << ',' << r.time_s << ",\"" << bound << "\"," << p.kv_head_count() << ','
      << (r.algo->dq_modes ? dq_name(r.tiles.dq) : "");  // dq: empty where the program has no choice
    return s.str();
}

}  // namespace fasim
