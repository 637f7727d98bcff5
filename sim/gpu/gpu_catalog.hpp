// The GPUs fa-sim knows: built-in presets (sim/gpu/presets/*.json, embedded into the
// library at build time, so no file is read at run time) and user GPU files in the same
// format ("fa-sim-gpu/1", docs/gpu-file.md), checked field by field.
//
// Every function here reports bad input as fasim::UsageError with a one-line message
// that names the file, the field, the bad value, the allowed range and a fix.
#pragma once

#include <string>
#include <vector>

#include "gpu_spec.hpp"

namespace fasim {

// The format tag every GPU file carries in its "format" key.
inline constexpr const char* kGpuFileFormat = "fa-sim-gpu/1";

// Parses and validates the text of a GPU file. `origin` names it in error messages
// (a path, or e.g. "preset H200.json").
GpuSpec parse_gpu_json(const std::string& text, const std::string& origin);

// Reads and validates a user's GPU file (--gpu-file PATH).
GpuSpec load_gpu_file(const std::string& path);

// The built-in presets, in file-name order (A100-SXM4-40GB, A100-SXM4-80GB, H100-SXM,
// H200, L4, T4). Parsed once, on first use.
const std::vector<GpuSpec>& gpu_presets();

// Preset names in the same order.
std::vector<std::string> gpu_preset_names();

// The preset with this name, compared case-insensitively ("h100-sxm" finds H100-SXM).
// An unknown name throws UsageError listing the valid names.
GpuSpec find_gpu_preset(const std::string& name);

// The preset for a device as the CUDA runtime or nvidia-smi names it ("NVIDIA H100 80GB HBM3" ->
// "H100-SXM"); memory_bytes (0: unknown) tells the two A100s apart where the name does not. Empty
// when no preset matches.
std::string preset_for_device(const std::string& device_name, std::size_t memory_bytes = 0);

// "A100-SXM4-40GB": the FlashAttention papers' GPU.
std::string default_gpu_name();

// The spec as a GPU file (format fa-sim-gpu/1, keys in the documented order), e.g. as a
// starting point for a user's own GPU. parse_gpu_json(gpu_spec_to_json(s), ...) gives s back.
std::string gpu_spec_to_json(const GpuSpec& spec);

}  // namespace fasim
