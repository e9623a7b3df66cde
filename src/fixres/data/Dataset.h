// Datasets: indexable (sample -> label, and the bytes or pixels to transform). Image folders
// follow torchvision's ImageFolder rules; IDX files are MNIST / Fashion-MNIST (gzipped or not).
// Every implementation is safe to read from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fixres/data/FileIndex.h"
#include "fixres/image/Image.h"

namespace fixres::data {

// One stored sample before decoding: encoded file bytes, or pixels for datasets that hold them.
struct RawSample {
  std::shared_ptr<const std::vector<uint8_t>> bytes;  // encoded JPEG/PNG (when !isDecoded)
  image::Image decoded;                               // RGB pixels (when isDecoded)
  bool isDecoded = false;
  std::string name;  // file path (or "file[index]"), used in error messages

  const uint8_t* data() const { return bytes ? bytes->data() : nullptr; }
  size_t size() const { return bytes ? bytes->size() : 0; }
};

class Dataset {
 public:
  virtual ~Dataset();
  virtual size_t size() const = 0;
  virtual int64_t label(size_t i) const = 0;  // in [0, classes().size())
  virtual const std::vector<std::string>& classes() const = 0;
  // The file path of sample i (or "file[i]" for samples inside one file).
  virtual std::string name(size_t i) const = 0;
  // Reads sample i: DataError naming the file when it cannot be read.
  virtual RawSample fetch(size_t i) const = 0;
  // Where the dataset comes from (root folder or file), for messages.
  virtual std::string source() const = 0;
  // Samples per stored run that reads fastest in order (tar shards: indices 0 .. s0-1 are the
  // first shard, and so on); empty when any order reads as fast (files, memory).
  virtual std::vector<size_t> shardSizes() const;
};

// torchvision ImageFolder: classes = sorted names of the sub-folders of root; samples = files
// with an IMG_EXTENSIONS suffix in each class folder, walked recursively (symlinks followed) in
// sorted path order (any case; the codec registry marks which formats are listed, image/Codec.h);
// but only regular files (or symlinks to them). Files left out (FIFOs, sockets, devices, broken
// symlinks) are counted in one warning with an example path. DataError if root is missing, has no
// class folder, or a class has no image.
std::shared_ptr<Dataset> openImageFolder(const std::string& root);
// The same listing, read from the folder's index when `index.enabled` and the index is current,
// else scanned and the index written (data/FileIndex.h). The samples, their order, labels and
// the warnings on left-out files are those of a plain scan; `report` says what happened.
std::shared_ptr<Dataset> openImageFolder(const std::string& root, const FileIndexOptions& index,
                                         FileIndexReport* report = nullptr);

// The sorted names of root's sub-folders (symlinks followed): ImageFolder's classes, read
// without listing their files; `fixres shard`'s working folders (`.partial-XXXXXX`, ShardIndex.h)
// are never classes. DataError when root cannot be listed.
std::vector<std::string> classFolders(const std::string& root);

// Every image under root, unlabelled: the files an image folder would take (the same extensions
// and rules), walked recursively in sorted path order whether or not they sit in class folders.
// One class (""), every label 0. DataError if root is missing or holds no image.
std::shared_ptr<Dataset> openImageFiles(const std::string& root);

// The factory over the dataset readers (data/DatasetReader.h; the list in DatasetReaders.cpp),
// for --imnet-path's train/ and val/ and --dataset-path: the labelled dataset at root as the
// first reader that recognises it reads it (a folder of tar shards, data/TarShards.h; an image
// folder, through its file index when `index.enabled`; ...). DataError when no reader takes root.
std::shared_ptr<Dataset> openDataset(const std::string& root, const FileIndexOptions& index = {});

// The images at root without labels (one class "", every label 0), as its reader gives them: an
// image folder's every image (openImageFiles), a shard folder's images (any .cls ignored), ...
std::shared_ptr<Dataset> openUnlabelledImages(const std::string& root);

// `base` labelled by `classes` (a model's class names) when every class of base is one of them
// by name: a folder holding only some of a model's classes (only `dog` of cat, dog) is scored
// against the model's indices, not its own. Else (no names, or a class the model lacks) base.
std::shared_ptr<const Dataset> labelledAs(std::shared_ptr<const Dataset> base,
                                          const std::vector<std::string>& classes);

// The class names root declares without reading its samples, as its reader says: an image
// folder's class folders, the classes a shard folder's index names, ...; empty when it declares
// none (a flat folder of images, shards without an index).
std::vector<std::string> declaredClasses(const std::string& root);

// IDX (MNIST format) image and label files, gzipped or not: 28 x 28 grayscale images returned as
// RGB (the channel replicated, as PIL's convert("RGB")); classes "0", "1", ... up to the largest
// label. DataError on a bad magic number, truncated file, or count mismatch.
std::shared_ptr<Dataset> openIdx(const std::string& imagesPath, const std::string& labelsPath);

// Files on disk with their labels, in this order: what an image folder or a list of files is once
// listed. fetch(i) reads paths[i] (DataError naming it when it cannot be read); source() is
// `source` (the folder or list file, for messages).
std::shared_ptr<Dataset> filesDataset(std::string source, std::vector<std::string> classes,
                                      std::vector<std::string> paths, std::vector<int64_t> labels);

// A flat folder of images labelled by a CSV file (`eval --labels-csv`), such as ImageNet's val
// folder with LOC_val_solution.csv. Rows are `file,label` (fields as CsvListReader reads them,
// further fields ignored); the file is relative to `folder`, and a name without an extension
// stands for the first of name.JPEG, .jpg, .jpeg, .png, .JPG, .PNG there (LOC_val_solution's
// ImageId). The label is the field's first word (LOC_val_solution's PredictionString starts with
// the synset). A first row whose file is not in the folder is a header, skipped. With `classes`
// given (the weights' names), a label is one of them or an index into them; without, the classes
// are 0 .. classCount - 1 (the model's classifier size; <= 0: unknown, then 0 .. the largest
// label, at most 999999) when every label is a whole number, else the sorted names (at most
// classCount of them). Samples keep the file's order. DataError naming csv:line for a missing
// file, an unknown label, a label index the model does not have or a malformed row.
std::shared_ptr<Dataset> openLabelsCsv(const std::string& folder, const std::string& csv,
                                       std::vector<std::string> classes, int64_t classCount = 0);

// A dataset whose file bytes are read once into memory (for benchmarks and small datasets).
std::shared_ptr<Dataset> cacheInMemory(std::shared_ptr<const Dataset> dataset);

// DataError naming both sources and the first difference when the class lists differ.
void checkSameClasses(const Dataset& train, const Dataset& val);

}  // namespace fixres::data
