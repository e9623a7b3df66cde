// fixres: entry point. Everything happens in cli::runCli, which never lets an exception escape.
#include "fixres/cli/Command.h"

int main(int argc, char** argv) {
  return fixres::cli::runCli(argc, argv);
}
