// Dataset formats as readers. A reader knows one way a dataset is stored (a folder of tar shards,
// an image folder through its file index, a plain image folder): whether a root is its own, how
// to open it labelled and unlabelled, the classes it declares without reading a sample, and the
// sampler training must read it with, if any. data/DatasetReaders.cpp lists them; the factory
// (readerFor, and openDataset, openUnlabelledImages, declaredClasses in Dataset.h) asks them in
// that order, the first that recognises the root reads it. No other layer looks inside a
// dataset folder.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"
#include "fixres/data/FileIndex.h"
#include "fixres/data/Sampler.h"

namespace fixres::data {

class DatasetReader {
 public:
  virtual ~DatasetReader();
  // What it reads, for messages and logs: "shard folder", "image folder", ...
  virtual std::string name() const = 0;
  // Whether `root` is stored its way: a look at the root itself (its type, name or entries),
  // never at the samples. `index`: how image folders are to be listed.
  virtual bool recognises(const std::string& root, const FileIndexOptions& index) const = 0;
  // The labelled dataset at `root` (DataError naming the root when it cannot be read).
  virtual std::shared_ptr<Dataset> open(const std::string& root,
                                        const FileIndexOptions& index) const = 0;
  // Its images without labels: one class (""), every label 0 (what calibrate reads).
  virtual std::shared_ptr<Dataset> openUnlabelled(const std::string& root) const = 0;
  // The class names `root` declares without reading its samples (class folders, a shard index's
  // classes); empty when it declares none.
  virtual std::vector<std::string> declaredClasses(const std::string& root) const = 0;
  // The sampler training must use (tar shards read in order), or none: --sampler decides.
  virtual std::optional<SamplerKind> requiredSampler() const;
};

// The registered readers, in the order they are asked (data/DatasetReaders.cpp).
const std::vector<const DatasetReader*>& datasetReaders();

// The first reader that recognises `root`; DataError naming the root when none does (it does not
// exist, or it is no folder and no file a reader takes).
const DatasetReader& readerFor(const std::string& root, const FileIndexOptions& index = {});

}  // namespace fixres::data
