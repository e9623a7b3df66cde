// The registry: the registered families (Families.cpp) asked in turn.
#include "fixres/models/Registry.h"

#include <optional>

#include "fixres/common/Error.h"
#include "fixres/common/Nearest.h"

namespace fixres::models {
namespace {

// The first family that knows `name`, with its ArchInfo.
std::optional<ArchInfo> findArchitecture(const std::string& name) {
  for (const ArchitectureFamily* f : architectureFamilies()) {
    if (auto info = f->find(name)) {
      info->family = f;
      return info;
    }
  }
  return std::nullopt;
}

std::string knownList() {
  std::string s, notes;
  for (const auto& n : knownArchitectures()) s += (s.empty() ? "" : ", ") + n;
  for (const ArchitectureFamily* f : architectureFamilies())
    if (!f->namesNote.empty()) notes += (notes.empty() ? "" : "; ") + f->namesNote;
  return notes.empty() ? s : s + " (" + notes + ")";
}

}  // namespace

void checkNumClasses(int64_t numClasses) {
  FIXRES_CHECK(numClasses >= 1, UsageError, "number of classes must be at least 1, got ",
               numClasses);
}

std::vector<std::string> knownArchitectures() {
  std::vector<std::string> names;
  for (const ArchitectureFamily* f : architectureFamilies())
    names.insert(names.end(), f->names.begin(), f->names.end());
  for (const ArchitectureFamily* f : architectureFamilies())
    names.insert(names.end(), f->aliases.begin(), f->aliases.end());
  return names;
}

ArchInfo architectureInfo(const std::string& name) {
  if (auto info = findArchitecture(name)) return *info;
  // The three nearest names first: the whole list is long (docs/models.md describes it).
  FIXRES_FAIL(UsageError, "unknown architecture '", name, "' (did you mean ",
              orList(nearestNames(name, knownArchitectures(), 3)), "?); known: ", knownList());
}

Model createModel(const std::string& name, const ModelOptions& options) {
  checkNumClasses(options.numClasses);
  const ArchInfo info = architectureInfo(name);
  return info.family->create(info.name, options);
}

Model createModel(const std::string& name, int64_t numClasses) {
  ModelOptions o;
  o.numClasses = numClasses;
  return createModel(name, o);
}

bool isFixresOwn(const std::string& name) {
  const std::string canonical = architectureInfo(name).name;
  return canonical == "resnet_tiny" || canonical == "vit_demo" || canonical == "convnext_demo";
}

int outputStride(const std::string& name) {
  return architectureInfo(name).outputStride;
}

}  // namespace fixres::models
