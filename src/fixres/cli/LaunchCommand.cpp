// `fixres launch`: start the local ranks of a job (torchrun-style environment), or with
// --print-env show what a rank would detect from its flags and environment.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "fixres/cli/Command.h"
#include "fixres/cli/Flags.h"
#include "fixres/cli/Options.h"
#include "fixres/common/Error.h"
#include "fixres/distributed/Launcher.h"

namespace fixres::cli {
namespace {

std::string selfExecutable() {
  char path[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  FIXRES_CHECK(n > 0, InternalError, "cannot locate the fixres executable (/proc/self/exe)");
  path[n] = '\0';
  return path;
}

// The subcommands of `app` in the order they were declared, e.g. "train, finetune, ...".
std::string subcommandNames(const CLI::App& app) {
  std::string names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_name().empty()) continue;
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  return names;
}

bool isSubcommand(const CLI::App& app, const std::string& word) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_name().empty() && sub->check_name(word)) return true;
  }
  return false;
}

bool isExecutableFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

// The file execvp would run for `program`: a name with a '/' as it is, a bare name from the
// first PATH folder that holds an executable file of that name (an empty entry is the current
// folder; no PATH is "/bin:/usr/bin", as glibc). Checked here so that a typo fails once, with
// exit code 2, instead of once per rank after the job has started. `orSubcommand`: the word
// could have been a subcommand (for the message).
std::string resolveProgram(const std::string& program, bool orSubcommand) {
  FIXRES_CHECK(!program.empty(), UsageError, "fixres launch: the program name is empty");
  if (program.find('/') != std::string::npos) {
    struct stat st {};
    FIXRES_CHECK(::stat(program.c_str(), &st) == 0, UsageError, "fixres launch: program '", program,
                 "' not found (", std::strerror(errno), ")");
    FIXRES_CHECK(isExecutableFile(program), UsageError, "fixres launch: program '", program,
                 "' is not an executable file");
    return program;
  }
  const char* env = std::getenv("PATH");
  const std::string path = env ? env : "/bin:/usr/bin";
  size_t start = 0;
  while (true) {
    const size_t colon = path.find(':', start);
    std::string dir = path.substr(start, colon == std::string::npos ? colon : colon - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + program;
    if (isExecutableFile(candidate)) return candidate;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  throw UsageError(detail::concat("fixres launch: '", program, "' is ",
                                  orSubcommand ? "neither a fixres subcommand nor " : "not ",
                                  "an executable file on PATH (", path, ")"));
}

std::string launchRules(const CLI::App& parent) {
  return "What each rank runs, from the first word after '--':\n"
         "  a fixres subcommand, or a word starting with '-' (fixres options before the\n"
         "    subcommand): this fixres binary, with all the words as its arguments;\n"
         "  anything else: a program, with the words after it as its arguments. A path with a\n"
         "    '/' (./train.sh, build/bin/fixres) is used as it is; a bare name (python3) is\n"
         "    looked up on PATH. A program that does not exist or is not executable is a usage\n"
         "    error (exit code 2) before any rank starts.\n"
         "  A program named like a subcommand: write ./name, or --program name (then every word\n"
         "    after '--' is an argument of that program).\n"
         "Subcommands: " +
         subcommandNames(parent) +
         "\n"
         "Examples:\n"
         "  fixres launch --nproc-per-node 2 -- train --imnet-path /data/imagenet ...\n"
         "  fixres launch --nproc-per-node 2 -- python3 train.py --lr 0.1\n"
         "  fixres launch --nproc-per-node 2 -- /opt/bin/fixres eval ...";
}

}  // namespace

Command addLaunchCommand(CLI::App& parent) {
  auto* sub = parent.add_subcommand(
      "launch",
      "Start N local ranks of a fixres subcommand or of a program, torchrun-style: fixres launch "
      "--nproc-per-node N -- train ... | -- python3 train.py ...");
  // The subcommands are all declared by the time help is printed or the command runs.
  const CLI::App* parentApp = &parent;
  sub->footer([parentApp] { return launchRules(*parentApp); });
  struct State {
    distributed::LaunchRequest request;
    ClusterOptions cluster;
  };
  auto s = std::make_shared<State>();
  distributed::LaunchRequest::visitSettings(s->request, SettingsBinder{*sub});
  addClusterOptions(*sub, s->cluster);
  return {sub, [s, parentApp]() -> int {
            if (s->request.printEnv) {
              std::cout << resolveWorld(s->cluster).describe();
              return 0;
            }
            distributed::LaunchOptions& launch = s->request.launch;
            auto& args = launch.arguments;
            if (!s->request.program.empty()) {
              launch.executable = resolveProgram(s->request.program, false);
            } else {
              FIXRES_CHECK(!args.empty(), UsageError,
                           "fixres launch needs a command after '--', e.g. fixres launch "
                           "--nproc-per-node 2 -- train ... (see 'fixres launch --help')");
              const std::string& first = args.front();
              if (first.rfind('-', 0) == 0 || isSubcommand(*parentApp, first)) {
                launch.executable = selfExecutable();
              } else {
                launch.executable = resolveProgram(first, true);
                args.erase(args.begin());
              }
            }
            launch.timeoutSeconds = s->cluster.flags.timeoutSeconds;
            return distributed::launchLocalRanks(launch);
          }};
}

}  // namespace fixres::cli
