// The images a user names on a command line (`fixres predict`): image files, folders (every image
// below them, as an image folder's listing takes them, in sorted path order), list files (*.txt,
// *.lst: one path per line) and "-" (paths on standard input, one per line), in the order given.
#pragma once

#include <istream>
#include <memory>
#include <string>
#include <vector>

#include "fixres/data/Dataset.h"

namespace fixres::data {

// One unlabelled dataset (one class "", every label 0) of the named images, in order; a file named
// directly is taken whatever its extension (a corrupt one fails when it is read, not here). A
// list's relative paths are relative to the list's folder, stdin's to the working directory; blank
// lines and lines starting with '#' are skipped. `standardInput` is read for "-" (at most once).
// DataError naming the input when it does not exist, a list cannot be read, or nothing is found.
std::shared_ptr<Dataset> openImageInputs(const std::vector<std::string>& inputs,
                                         std::istream& standardInput);

}  // namespace fixres::data
