// The fixres command line: parsing, dispatch and the mapping of errors to exit codes.
#include "fixres/cli/Command.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iostream>

#include "fixres/cli/Flags.h"
#include "fixres/common/Error.h"
#include "fixres/common/Log.h"
#include "fixres/common/Nearest.h"
#include "fixres/common/Runtime.h"

namespace fixres::cli {
namespace {

void addGlobalOptions(CLI::App& app, GlobalOptions& g) {
  GlobalOptions::visitSettings(g, SettingsBinder{app});
}

int fail(ExitCode code, const std::string& message) {
  std::cerr << "fixres: error: " << oneLine(message) << std::endl;
  return static_cast<int>(code);
}

// Where a subcommand is required but none was recognised (fixres, fixres bench): "unknown
// subcommand 'x' of fixres (one of: ...)" or "fixres needs a subcommand (one of: ...)"; "" when
// every level has its subcommand (then CLI11's own message is the right one).
std::string subcommandProblem(CLI::App& app, int argc, char** argv) {
  CLI::App* at = &app;
  std::string unknown;
  for (int k = 1; k < argc && at->get_require_subcommand_min() > 0; ++k) {
    const std::string word = argv[k];
    if (word.rfind("-", 0) == 0) {
      if (at == &app && (word == "--threads" || word == "--config")) ++k;  // its value
      continue;
    }
    auto named = [&word](CLI::App* a) { return a->get_name() == word; };
    auto found = at->get_subcommands(named);
    if (found.empty()) {
      unknown = word;
      break;
    }
    at = found.front();
  }
  if (at->get_require_subcommand_min() == 0) return "";
  std::string names;
  for (const CLI::App* sub : at->get_subcommands([](const CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  const std::string of = at == &app ? "fixres" : "fixres " + at->get_name();
  if (unknown.empty()) return of + " needs a subcommand (one of: " + names + ")";
  return "unknown subcommand '" + unknown + "' of " + of + " (one of: " + names + ")";
}

// The deepest subcommand given ("fixres" itself when none was).
CLI::App* deepestParsed(CLI::App& app) {
  CLI::App* at = &app;
  for (bool deeper = true; deeper;) {
    deeper = false;
    for (CLI::App* sub : at->get_subcommands()) {
      at = sub;
      deeper = true;
      break;
    }
  }
  return at;
}

// "fixres bench eval"
std::string commandPath(const CLI::App* at) {
  std::string path;
  for (; at != nullptr && at->get_parent() != nullptr; at = at->get_parent())
    path = " " + at->get_name() + path;
  return "fixres" + path;
}

// The commands below `app` (their paths without "fixres ") that take flag `word`.
void commandsTaking(const CLI::App& app, const std::string& word, std::vector<std::string>& out) {
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    for (const CLI::Option* o : sub->get_options())
      if (o->check_name(word)) {
        out.push_back(commandPath(sub).substr(7));
        break;
      }
    commandsTaking(*sub, word, out);
  }
}

// For arguments the command does not take: "fixres train: unknown flag --learning_rate (did you
// mean --learning-rate?); see 'fixres train --help'", naming the first flag that is none of the
// command's (nor a global one); "" when every flag given is known.
std::string unknownFlagProblem(CLI::App& app, int argc, char** argv) {
  CLI::App* at = deepestParsed(app);
  std::vector<std::string> known;
  for (const CLI::App* a : {static_cast<const CLI::App*>(at), static_cast<const CLI::App*>(&app)})
    for (const CLI::Option* o : a->get_options()) {
      for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
      for (const std::string& n : o->get_snames()) known.push_back("-" + n);
    }
  const std::string command = commandPath(at);
  for (int k = 1; k < argc; ++k) {
    std::string word = argv[k];
    if (word == "--") break;
    if (word.size() < 2 || word[0] != '-' || std::isdigit(static_cast<unsigned char>(word[1])))
      continue;
    word = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), word) != known.end()) continue;
    // Spellings of timm's train.py whose meaning differs from fixres's nearest flag.
    static const std::pair<const char*, const char*> kOtherMeanings[] = {
        {"--lr",
         "fixres's --learning-rate is FixRes's base rate, scaled by the batch (add "
         "--absolute-lr for the rate as given)"},
        {"--amp", "mixed precision is --precision bf16 (or fp16 on CUDA)"},
        {"--resume",
         "rerun the same command: a run folder resumes from its checkpoint "
         "(docs/training.md)"}};
    for (const auto& [spelling, meaning] : kOtherMeanings)
      if (word == spelling)
        return command + ": unknown flag " + word + ": " + meaning + "; see '" + command +
               " --help'";
    std::vector<std::string> others;
    commandsTaking(app, word, others);
    if (!others.empty())
      return command + " does not take " + word + ": it is a flag of " + orList(others) +
             "; see '" + command + " --help'";
    const auto near = nearestNames(word, known, 3, std::max<size_t>(2, word.size() / 4));
    return command + ": unknown flag " + word +
           (near.empty() ? "" : " (did you mean " + orList(near) + "?)") + "; see '" + command +
           " --help'";
  }
  return "";
}

}  // namespace

std::vector<Command> buildCli(CLI::App& app, GlobalOptions& global) {
  app.set_version_flag("--version", fixresVersion());
  app.require_subcommand(1);
  app.fallthrough();
  addGlobalOptions(app, global);
  std::vector<Command> commands{
      addTrainCommand(app),   addFinetuneCommand(app),    addEvalCommand(app),
      addExtractCommand(app), addEvalSoftmaxCommand(app), addLaunchCommand(app),
      addBenchCommand(app),   addVersionCommand(app),     addSuggestResolutionCommand(app),
      addImportCommand(app),  addSweepCommand(app),       addExportCommand(app),
      addWeightsCommand(app), addCalibrateCommand(app),   addPlotCommand(app),
      addShardCommand(app),   addSettingsCommand(app),    addPredictCommand(app),
      addHoldoutCommand(app),
  };
  return commands;
}

int runCli(int argc, char** argv) {
  configureProcess();
  CLI::App app{"fixres: FixRes (train low, test high, fine-tune at the test resolution) in C++",
               "fixres"};
  GlobalOptions global;
  std::vector<Command> commands = buildCli(app, global);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::CallForAllHelp&) {
    std::cout << app.help("", CLI::AppFormatMode::All);
    return 0;
  } catch (const CLI::CallForVersion&) {
    std::cout << "fixres " << fixresVersion() << "\n";
    return 0;
  } catch (const CLI::ParseError& e) {
    // Help requested on a subcommand arrives here as CallForHelp too (handled above).
    const std::string problem = subcommandProblem(app, argc, argv);
    if (!problem.empty()) return fail(ExitCode::kUsage, problem);
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const std::string flag = unknownFlagProblem(app, argc, argv);
      if (!flag.empty()) return fail(ExitCode::kUsage, flag);
    }
    return fail(ExitCode::kUsage,
                std::string(e.what()) + " (see '" + commandPath(deepestParsed(app)) + " --help')");
  } catch (const std::exception& e) {
    // Parsing runs the options' callbacks, which read what a flag names (a model folder's
    // config.json, a --config file): their errors keep their exit codes.
    return fail(exitCodeOf(e), e.what());
  }

  if (global.verbose) log::setLevel(log::Level::kDebug);
  if (global.quiet) log::setLevel(log::Level::kWarn);
  log::setAllRanks(global.logAllRanks);

  try {
    configureThreads(global.threads);
    for (auto& c : commands) {
      if (c.app->parsed()) return c.run();
    }
    return fail(ExitCode::kUsage, "no subcommand given (see 'fixres --help')");
  } catch (const CLI::ParseError& e) {
    return fail(ExitCode::kUsage, e.what());
  } catch (const DistributedError& e) {
    // Leave at once: destructors of a process group whose peer is gone may block on it.
    fail(e.code(), e.what());
    std::fflush(nullptr);
    std::_Exit(static_cast<int>(e.code()));
  } catch (const Error& e) {
    return fail(e.code(), e.what());
  } catch (const c10::Error& e) {
    return fail(ExitCode::kOther, e.what_without_backtrace());
  } catch (const std::bad_alloc&) {
    return fail(ExitCode::kOther, "out of memory");
  } catch (const std::exception& e) {
    return fail(exitCodeOf(e), e.what());
  }
}

}  // namespace fixres::cli
