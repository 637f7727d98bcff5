#include "validate/ncu_counters.hpp"

#include <cstdio>
#include <sstream>

namespace fasim {

namespace {

const char* kCoreMetrics =
    "dram__bytes_read.sum,dram__bytes_write.sum,l1tex__m_xbar2l1tex_read_sectors.sum,"
    "l1tex__m_l1tex2xbar_write_sectors.sum,lts__t_sectors_srcunit_tex_op_read.sum,"
    "lts__t_sectors_srcunit_tex_op_write.sum";
const char* kFlushKernel = "l2_flush_read_kernel";  // harness/timing.cu
const char* kSmemMetric = "smsp__sass_data_bytes_mem_shared.sum";

std::vector<std::string> csv_fields(const std::string& line) {
    std::vector<std::string> f;
    std::string cur;
    bool quoted = false;
    for (char ch : line) {
        if (ch == '"') quoted = !quoted;
        else if (ch == ',' && !quoted) {
            f.push_back(cur);
            cur.clear();
        } else cur += ch;
    }
    f.push_back(cur);
    return f;
}

double number(const std::string& s) {
    std::string t;
    for (char c : s)
        if (c != ',') t += c;
    try {
        return std::stod(t);
    } catch (...) {
        return 0;
    }
}

std::string run(const std::string& cmd, int& status) {
    std::string out;
    FILE* f = popen((cmd + " 2>&1").c_str(), "r");
    if (!f) {
        status = -1;
        return out;
    }
    char buf[4096];
    while (fgets(buf, sizeof buf, f)) out += buf;
    status = pclose(f);
    return out;
}

double ratio(double predicted, double measured) { return measured > 0 ? predicted / measured : 0; }

}  // namespace

NcuMeasurement parse_ncu_csv(const std::string& text) {
    NcuMeasurement m;
    std::istringstream in(text);
    std::vector<std::string> header;
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("\"ID\"", 0) == 0) {
            header = csv_fields(line);
            continue;
        }
        if (header.empty() || line.empty() || line[0] != '"') continue;
        const auto f = csv_fields(line);
        if (f.size() != header.size()) continue;
        NcuKernel k;
        bool data_row = false;
        for (std::size_t i = 0; i < f.size(); ++i) {
            const std::string& h = header[i];
            if (h == "Kernel Name") k.name = f[i], k.flush = f[i].find(kFlushKernel) != std::string::npos;
            else if (h == "dram__bytes_read.sum") k.dram_read = number(f[i]), data_row = !f[i].empty() && std::isdigit(static_cast<unsigned char>(f[i][0]));
            else if (h == "dram__bytes_write.sum") k.dram_write = number(f[i]);
            else if (h == "l1tex__m_xbar2l1tex_read_sectors.sum") k.l2_read = 32 * number(f[i]);
            else if (h == "l1tex__m_l1tex2xbar_write_sectors.sum") k.l2_write = 32 * number(f[i]);
            else if (h == "lts__t_sectors_srcunit_tex_op_read.sum") k.l2_slice_read = 32 * number(f[i]);
            else if (h == "lts__t_sectors_srcunit_tex_op_write.sum") k.l2_slice_write = 32 * number(f[i]);
            else if (h == kSmemMetric) k.smem = number(f[i]);
        }
        if (data_row) m.kernels.push_back(k);  // skips the units row
    }
    return m;
}

NcuMeasurement run_ncu(const std::string& ncu, const std::string& child) {
    for (bool with_smem : {true, false}) {
        const std::string metrics = std::string(kCoreMetrics) + (with_smem ? std::string(",") + kSmemMetric : "");
        const std::string cmd = ncu + " --clock-control none --cache-control none --replay-mode application --csv --page raw "
                                "--print-units base --metrics " + metrics + " " + child;
        int status = 0;
        const std::string out = run(cmd, status);
        NcuMeasurement m = parse_ncu_csv(out);
        m.command = cmd;
        if (status == 0 && !m.kernels.empty()) return m;
        if (!with_smem) {
            m.error = "ncu exited with status " + std::to_string(status) + ": " + out.substr(0, 400);
            return m;
        }
    }
    return {};
}

nlohmann::json ncu_json(const NcuMeasurement& m, const AlgorithmResult& p) {
    if (!m.error.empty()) return {{"error", m.error}, {"command", m.command}};
    NcuKernel total;
    total.smem = 0;
    double write_back = 0;  // DRAM writes of the flush after the kernels: their dirty lines
    bool seen_kernel = false, seen_flush = false;
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& k : m.kernels) {
        kernels.push_back({{"name", k.name}, {"flush", k.flush}, {"dram_read_bytes", k.dram_read},
                           {"dram_write_bytes", k.dram_write}, {"l2_read_bytes", k.l2_read}, {"l2_write_bytes", k.l2_write},
                           {"l2_slice_read_bytes", k.l2_slice_read}, {"l2_slice_write_bytes", k.l2_slice_write},
                           {"smem_bytes", k.smem}});
        if (k.flush) {
            if (seen_kernel) write_back += k.dram_write;
            seen_flush = true;
            continue;
        }
        if (!seen_flush) {  // set-up before the first flush (a backward's forward kernel): not measured
            kernels.back()["setup"] = true;
            continue;
        }
        seen_kernel = true;
        total.dram_read += k.dram_read;
        total.dram_write += k.dram_write;
        total.l2_read += k.l2_read;
        total.l2_write += k.l2_write;
        total.l2_slice_read += k.l2_slice_read;
        total.l2_slice_write += k.l2_slice_write;
        total.smem = k.smem < 0 || total.smem < 0 ? -1 : total.smem + k.smem;
    }
    const double pd_r = static_cast<double>(p.dram.read_bytes()), pd_w = static_cast<double>(p.dram.write_bytes());
    const double pl_r = static_cast<double>(p.l2.read_bytes()), pl_w = static_cast<double>(p.l2.write_bytes());
    const double ps = static_cast<double>(p.smem_read + p.smem_write);
    const double dram_write = total.dram_write + write_back;
    return {{"command", m.command},
            {"kernels", kernels},
            {"measured", {{"dram_read_bytes", total.dram_read}, {"dram_write_bytes", dram_write},
                          {"dram_write_during_kernels_bytes", total.dram_write}, {"dram_write_back_after_bytes", write_back},
                          {"l2_read_bytes", total.l2_read}, {"l2_write_bytes", total.l2_write},
                          {"l2_slice_read_bytes", total.l2_slice_read}, {"l2_slice_write_bytes", total.l2_slice_write},
                          {"smem_bytes", total.smem}}},
            {"predicted", {{"dram_read_bytes", pd_r}, {"dram_write_bytes", pd_w}, {"l2_read_bytes", pl_r},
                           {"l2_write_bytes", pl_w}, {"smem_bytes", ps}}},
            {"predicted_over_measured",
             {{"dram_read", ratio(pd_r, total.dram_read)}, {"dram_write", ratio(pd_w, dram_write)},
              {"l2_read", ratio(pl_r, total.l2_read)}, {"l2_write", ratio(pl_w, total.l2_write)},
              {"l2_slice_read", ratio(pl_r, total.l2_slice_read)},
              {"smem", total.smem > 0 ? ratio(ps, total.smem) : 0.0}}}};
}

std::string ncu_summary(const NcuMeasurement& m, const AlgorithmResult& p) {
    if (!m.error.empty()) return m.error.substr(0, 200);
    const auto j = ncu_json(m, p);
    const auto& meas = j["measured"];
    const auto& r = j["predicted_over_measured"];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%zu kernels; DRAM read %.3g MB (pred/meas %.2f), write %.3g MB (%.2f); L2 read %.3g MB (%.2f; "
                  "slices %.2f), write %.3g MB (%.2f); smem %.3g MB (%.2f)",
                  j["kernels"].size(), meas["dram_read_bytes"].get<double>() / 1e6, r["dram_read"].get<double>(),
                  meas["dram_write_bytes"].get<double>() / 1e6, r["dram_write"].get<double>(),
                  meas["l2_read_bytes"].get<double>() / 1e6, r["l2_read"].get<double>(), r["l2_slice_read"].get<double>(),
                  meas["l2_write_bytes"].get<double>() / 1e6, r["l2_write"].get<double>(),
                  meas["smem_bytes"].get<double>() / 1e6, r["smem"].get<double>());
    return buf;
}

}  // namespace fasim
